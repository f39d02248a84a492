// Package store is the port through which runfleet keeps its state: the
// instances (supply), the job ledger (demand), per-pool capacity counters,
// runner credentials, spot breakers, leases, cursors and shared GitHub
// budgets. Every record kind is written by the same compare-and-set
// (record.go). Adapters (store/bolt for embedded mode, store/dynamodb for
// AWS) implement Store and must pass the one contract suite in
// store/storetest. Abilities only some adapters have are interfaces of
// their own, found by whoever opens the adapter: Outbox (the queue in the
// store's own writes), Purger (expiry the backend does not do itself) and
// DeletedLister (the kept history).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Store keeps instances, jobs, per-pool capacity counters and runner
// credentials. Every write is conditional: nothing is ever overwritten
// blindly.
type Store interface {
	// CreateInstance writes a.Instance if no instance with its name exists
	// (live, or deleted but not yet expired), and in the SAME atomic write
	// reserves one of its pool's a.MaxRunners slots and, when a.Job is set,
	// writes the job's next version (see Admission). It returns
	// ErrAlreadyExists, ErrPoolFull, ErrJobExists or a *ConflictError (of the
	// job) and
	// writes nothing in any of those cases. On success the instance's
	// Version is 1 and the job's Version is its stored one.
	CreateInstance(ctx context.Context, a Admission) error
	// UpdateInstance replaces the stored instance with next if, and only if,
	// the stored one still has status `from` and version next.Version. The
	// transition from -> next.Status must be legal (runner.CanTransition) or an
	// *runner.IllegalTransitionError is returned before anything is written.
	// On success next.Version is incremented. When next.Status is deleted the
	// pool's capacity slot is released in the same atomic write. A lost race
	// returns a *ConflictError: re-read and decide again, never overwrite.
	UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error
	// GetInstance returns ErrNotFound when there is no such instance.
	GetInstance(ctx context.Context, name string) (*runner.Instance, error)
	// ListInstancesByPool returns the pool's live instances.
	ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error)
	// ListLiveInstances returns every instance whose status is not deleted.
	ListLiveInstances(ctx context.Context) ([]*runner.Instance, error)
	// PoolUsage returns how many capacity slots the pool holds now.
	PoolUsage(ctx context.Context, pool string) (int, error)

	Jobs
	Credentials
	SpotBreakers
	Leases
	Cursors
	Budgets

	// InstallationID returns this runfleet installation's id: random,
	// made on first use and kept in the store, so every process sharing the
	// store (every Lambda function, a restarted serve) reads the same one
	// and two installations never share one. Provider-side ownership marks
	// (runner.PoolID) derive from it.
	InstallationID(ctx context.Context) (string, error)
}

// Jobs is the job ledger: demand, one record per job run attempt.
type Jobs interface {
	// CreateJob writes job if no job with its key exists (or only one whose
	// retention is over); otherwise it returns ErrJobExists and writes
	// nothing. On success job.Version is 1.
	CreateJob(ctx context.Context, job *runner.Job) error
	// UpdateJob replaces the stored job with next if, and only if, the
	// stored one still has status `from` and version next.Version; the
	// transition must be legal (runner.CanJobTransition) or an
	// *runner.IllegalTransitionError is returned before anything is
	// written. On success next.Version is incremented. A lost race returns a
	// *ConflictError.
	UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error
	// GetJob returns ErrJobNotFound when there is no job with that key
	// (runner.JobKey), or only one whose retention is over.
	GetJob(ctx context.Context, key string) (*runner.Job, error)
	// ListOpenJobs returns every job whose demand is not settled (open,
	// waiting or unmatched), oldest QueuedAt first. Its cost follows open
	// demand, never the ledger's history.
	ListOpenJobs(ctx context.Context) ([]*runner.Job, error)
}

// SpotBreakers keeps each pool's spot circuit breaker (runner.SpotBreaker):
// one small record per pool, shared by every process, written by
// compare-and-set.
type SpotBreakers interface {
	// GetSpotBreaker returns the pool's breaker; a pool with none stored
	// yet gets a zero record (Version 0), never an error.
	GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error)
	// PutSpotBreaker writes next if the stored breaker still has version
	// next.Version (0: none stored); on success next.Version is
	// incremented. A lost race returns a *ConflictError.
	PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error
}

// Admission is one CreateInstance: an instance, the capacity it reserves,
// and — for an instance made for a job — the job's next version, which
// names the instance (Job.Instance) and counts it (Job.Made).
type Admission struct {
	Instance   *runner.Instance
	MaxRunners int
	// Job, when set, is written in the same atomic write. With JobFrom ""
	// the job is created (ErrJobExists if it exists); otherwise it replaces
	// the stored job iff that still has status JobFrom and version
	// Job.Version (*ConflictError if not). Nil for instances no job asked
	// for (min_idle warm runners).
	Job     *runner.Job
	JobFrom runner.JobStatus
}

var (
	// ErrNotFound: no instance by that name.
	ErrNotFound = errors.New("store: instance not found")
	// ErrAlreadyExists: an instance by that name exists already.
	ErrAlreadyExists = errors.New("store: instance already exists")
	// ErrPoolFull: the pool holds max_runners live instances already.
	ErrPoolFull = errors.New("store: pool is at max_runners")
	// ErrConflict is matched by every *ConflictError (errors.Is), whatever
	// the record's kind.
	ErrConflict = errors.New("store: conditional write lost a race")
	// ErrJobNotFound: no job by that key.
	ErrJobNotFound = errors.New("store: job not found")
	// ErrJobExists: a job by that key exists already.
	ErrJobExists = errors.New("store: job already exists")
)

// DeletedRetention is how long a deleted instance's record, and a settled
// job's, is kept: as long as GitHub may redeliver the webhooks about it (3
// days on github.com, 7 on GHES), so a late redelivery finds it and makes
// nothing.
const DeletedRetention = 7 * 24 * time.Hour

// CheckAdmission validates a CreateInstance's arguments the same way in
// every adapter.
func CheckAdmission(a Admission) error {
	inst := a.Instance
	switch {
	case inst == nil:
		return errors.New("store: create instance: nil instance")
	case inst.Name == "":
		return errors.New("store: create instance: empty name")
	case inst.Pool == "":
		return fmt.Errorf("store: create instance %q: empty pool", inst.Name)
	case !inst.Status.Valid() || !inst.Status.Live():
		return fmt.Errorf("store: create instance %q: cannot create in status %q", inst.Name, inst.Status)
	case a.MaxRunners < 1:
		return fmt.Errorf("store: create instance %q: max runners %d is not positive", inst.Name, a.MaxRunners)
	}
	if a.Job != nil {
		if err := CheckJob(a.Job); err != nil {
			return err
		}
		if a.JobFrom != "" {
			return runner.CheckJobTransition(a.Job.Key(), a.JobFrom, a.Job.Status)
		}
	}
	return nil
}

// CheckJob refuses job records that could never be found again.
func CheckJob(j *runner.Job) error {
	switch {
	case j == nil:
		return errors.New("store: nil job")
	case j.ID <= 0 || j.RunAttempt < 1:
		return fmt.Errorf("store: job %d run attempt %d: both must be positive", j.ID, j.RunAttempt)
	case j.Pool == "" && j.UnmatchedReason == "":
		// Only a job no pool matched has none.
		return fmt.Errorf("store: job %s: empty pool", j.Key())
	case !j.Status.Valid():
		return fmt.Errorf("store: job %s: unknown status %q", j.Key(), j.Status)
	}
	return nil
}
