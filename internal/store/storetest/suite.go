// Package storetest is the one contract suite every store.Store adapter must
// pass. An adapter's test calls Run with a constructor that returns a fresh,
// empty store; the suite never reaches past the store.Store interface, so it
// runs unchanged against bbolt, DynamoDB Local or the real service.
//
// Contract points the suite pins down beyond store.go's comments:
//   - Times round-trip with at least millisecond precision. The suite only
//     writes millisecond-precision instants and compares them with
//     time.Time.Equal, so a store may drop the location and sub-millisecond
//     digits.
//   - UpdateInstance of a missing instance is a *store.ConflictError (the
//     instance is "gone" since it was read), not ErrNotFound; UpdateJob of a
//     missing job, and an admission's compare-and-set of one, is one too
//     (of Kind store.KindJob).
//   - A failed CreateInstance, UpdateInstance, CreateJob or UpdateJob leaves
//     the caller's structs untouched (in particular their Version).
//   - When a name is taken AND the pool is full, CreateInstance reports
//     ErrAlreadyExists: the caller learns its job already has a runner rather
//     than retrying a create that can never succeed. Which of ErrAlreadyExists,
//     ErrJobExists, a job's *store.ConflictError and ErrPoolFull an admission that
//     fails more than one check reports is otherwise left to the adapter.
//   - A deleted instance is readable with GetInstance until it expires, and
//     its stored ExpiresAt is never zero: a store fills in
//     now+store.DeletedRetention when the writer left it zero. The same holds
//     for a settled job (served, closed or expired), and the expiry is
//     reported back in the caller's struct.
//   - A name whose deleted record has expired (ExpiresAt in the past) can be
//     created again even if the store has not physically removed the record
//     yet (DynamoDB's TTL deletes lazily); likewise a job key, and GetJob
//     reports such a job as ErrJobNotFound.
//   - A *store.ConflictError names the losing write, whatever its record:
//     Kind, Key (an instance's name, runner.JobKey, a spot breaker's pool,
//     a lease's name), the `from` status it expected ("" for kinds without
//     one) and the Version it read. One race harness (race in races.go)
//     holds every kind to "exactly one writer wins".
//   - Leases decide expiry by the now their callers pass, never by the
//     store's clock.
//   - A shared budget's state is opaque to the store; concurrent changes
//     of one credential's budget each count once (a lost race is read and
//     changed again, not reported, at the suite's contention).
//   - ListOpenJobs lists each open or waiting job once, as currently stored,
//     by QueuedAt; the suite gives no two jobs the same QueuedAt, so the
//     order of ties is the adapter's.
//   - Credentials expire at ttl measured by the store itself; a store must
//     not rely on a background process to remove expired records, and must
//     not expire one early (keep the expiry it compares in milliseconds, or
//     round whole seconds up).
//
// Subtests run one after another (not in parallel): each is small, and a
// remote backend such as DynamoDB Local is shared between them.
package storetest

import (
	"testing"

	"github.com/runfleet/runfleet/internal/store"
)

type contractTest struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// Run runs the whole contract suite, one subtest per contract point, each on
// a fresh, empty store from newStore (which should register its own cleanup
// with t.Cleanup).
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	groups := [][]contractTest{
		createTests, updateTests, instanceKind.tests("Update"), readTests, raceTests,
		jobTests, jobKind.tests("Job"), admissionTests, openJobTests, jobRaceTests,
		installationTests, credentialTests, spotBreakerTests, leaseTests,
		cursorTests, budgetTests,
	}
	for _, group := range groups {
		for _, tc := range group {
			t.Run(tc.name, func(t *testing.T) {
				tc.run(t, newStore(t))
			})
		}
	}
	t.Run("InstallationID/DistinctPerStore", func(t *testing.T) {
		installationIDDistinctPerStore(t, newStore)
	})
}
