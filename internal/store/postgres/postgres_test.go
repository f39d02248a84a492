package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/pgmigrate"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/testclock"
)

func pendingInstance(pool string, job int64) *runner.Instance {
	at := time.Now()
	return &runner.Instance{
		Name: runner.InstanceName(pool, job, 1), Pool: pool, JobID: job, RunAttempt: 1,
		Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
		CreatedAt: at, UpdatedAt: at, StatusChangedAt: at,
	}
}

func move(t *testing.T, s store.Store, inst *runner.Instance, at time.Time, statuses ...runner.Status) *runner.Instance {
	t.Helper()
	for _, to := range statuses {
		next, err := inst.Transition(to, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateInstance(context.Background(), inst.Status, next); err != nil {
			t.Fatalf("%s -> %s: %v", inst.Status, to, err)
		}
		inst = next
	}
	return inst
}

var toDeleted = []runner.Status{runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted}

// A database a newer runfleet migrated is refused at Open, with an error
// that says so.
func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	s, dsn := openTemp(t)
	if _, err := s.Pool().Exec(ctx, "INSERT INTO runfleet_migrations (component, version, name) VALUES ('store', 99, 'from the future')"); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, dsn)
	if !errors.Is(err, pgmigrate.ErrNewerSchema) {
		t.Fatalf("Open on a newer schema = %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("error does not name the stored version: %v", err)
	}
}

// What a replica wrote is there for the next one: records and the
// installation id outlive the store that wrote them.
func TestSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	first, dsn := openTemp(t)
	inst := pendingInstance("p", 1)
	if err := first.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 3}); err != nil {
		t.Fatal(err)
	}
	id, err := first.InstallationID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	second, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if got, err := second.InstallationID(ctx); err != nil || got != id {
		t.Fatalf("installation id after reopen = %q, %v; want %q", got, err, id)
	}
	if _, err := second.GetInstance(ctx, inst.Name); err != nil {
		t.Fatalf("instance after reopen: %v", err)
	}
	if n, err := second.PoolUsage(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("pool usage after reopen = %d, %v; want 1", n, err)
	}
}

// Two replicas admitting into one pool at once never hold more than
// max_runners between them.
func TestReplicasShareMaxRunners(t *testing.T) {
	ctx := context.Background()
	a, dsn := openTemp(t)
	b, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const maxRunners, attempts = 5, 40
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range attempts {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			err := s.CreateInstance(ctx, store.Admission{Instance: pendingInstance("p", int64(i+1)), MaxRunners: maxRunners})
			switch {
			case err == nil:
				admitted.Add(1)
			case !errors.Is(err, store.ErrPoolFull):
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != maxRunners {
		t.Fatalf("%d admitted across two replicas, want exactly %d", got, maxRunners)
	}
	if n, _ := a.PoolUsage(ctx, "p"); n != maxRunners {
		t.Fatalf("pool usage = %d, want %d", n, maxRunners)
	}
}

// The purge removes what is due and nothing else: a deleted instance past
// its retention goes, a recent one stays, and a name re-created after its
// retention is live and stays; expired credentials go.
func TestPurgeExpired(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, postgres.WithClock(clock.Now))
	old, recent, reborn := pendingInstance("p", 1), pendingInstance("p", 2), pendingInstance("p", 3)
	for _, inst := range []*runner.Instance{old, recent, reborn} {
		if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 10}); err != nil {
			t.Fatal(err)
		}
	}
	move(t, s, old, clock.Now(), toDeleted...)
	move(t, s, reborn, clock.Now(), toDeleted...)
	clock.Advance(store.DeletedRetention + time.Minute)
	move(t, s, recent, clock.Now(), toDeleted...)
	again := pendingInstance("p", 3)
	if err := s.CreateInstance(ctx, store.Admission{Instance: again, MaxRunners: 10}); err != nil {
		t.Fatalf("re-creating a name past its retention: %v", err)
	}
	if err := s.PutRunnerCredentials(ctx, store.RunnerCredentials{Instance: recent.Name, CreateAttempt: 1, EncodedJITConfig: "x"}, time.Second); err != nil {
		t.Fatal(err)
	}

	if n, err := s.PurgeExpired(ctx); err != nil || n != 1 {
		t.Fatalf("PurgeExpired = %d, %v; want 1 (the old deleted instance)", n, err)
	}
	if _, err := s.GetInstance(ctx, old.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purged instance still read: %v", err)
	}
	for _, name := range []string{recent.Name, again.Name} {
		if _, err := s.GetInstance(ctx, name); err != nil {
			t.Fatalf("instance %s purged too early: %v", name, err)
		}
	}
	clock.Advance(2 * time.Second)
	if n, err := s.PurgeExpiredCredentials(ctx); err != nil || n != 1 {
		t.Fatalf("PurgeExpiredCredentials = %d, %v; want 1", n, err)
	}
}

func TestListDeletedInstances(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, postgres.WithClock(clock.Now))
	live, first, second, other := pendingInstance("p", 1), pendingInstance("p", 2), pendingInstance("p", 3), pendingInstance("q", 4)
	for _, inst := range []*runner.Instance{live, first, second, other} {
		if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 10}); err != nil {
			t.Fatal(err)
		}
	}
	start := clock.Now()
	move(t, s, first, start.Add(time.Minute), toDeleted...)
	move(t, s, second, start.Add(3*time.Minute), toDeleted...)
	move(t, s, other, start.Add(2*time.Minute), toDeleted...)
	list, err := s.ListDeletedInstances(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != second.Name || list[1].Name != first.Name {
		t.Fatalf("deleted in pool p = %v, want [%s %s] (most recent first)", instanceNames(list), second.Name, first.Name)
	}
	if all, _ := s.ListDeletedInstances(ctx, ""); len(all) != 3 {
		t.Fatalf("deleted in every pool = %v, want 3", instanceNames(all))
	}
}

func instanceNames(list []*runner.Instance) []string {
	var out []string
	for _, in := range list {
		out = append(out, in.Name)
	}
	return out
}

// Neither a DSN that cannot be parsed nor a server that refuses the login
// puts the password in the error.
func TestErrorsNeverShowThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const secret = "s3cret-pa55"
	for _, dsn := range []string{
		"postgres://runfleet:" + secret + "@127.0.0.1:1/runfleet?sslmode=disable&connect_timeout=2",
		"postgres://runfleet:" + secret + "@[::1/x",
		"host=127.0.0.1 port=notaport password=" + secret,
	} {
		_, err := postgres.Open(ctx, dsn)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error shows the password: %v", err)
		}
	}
}

// Records are JSON in a json column, which keeps what jsonb refuses: a NUL
// in a provider's fault text.
func TestKeepsNULInText(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	inst := pendingInstance("p", 1)
	inst.ProviderFault = "boom\x00after"
	if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetInstance(ctx, inst.Name)
	if err != nil || got.ProviderFault != inst.ProviderFault {
		t.Fatalf("fault text = %q, %v; want %q", got.ProviderFault, err, inst.ProviderFault)
	}
}
