package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bbolterrors "go.etcd.io/bbolt/errors"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testclock"
)

func openTemp(t testing.TB, opts ...bolt.Option) (*bolt.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "runfleet.db")
	s, err := bolt.Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}

// admit is the admission of an instance no job asked for.
func admit(inst *runner.Instance, maxRunners int) store.Admission {
	return store.Admission{Instance: inst, MaxRunners: maxRunners}
}

func pendingInstance(pool string, job int64) *runner.Instance {
	at := time.Now()
	return &runner.Instance{
		Name: runner.InstanceName(pool, job, 1), Pool: pool, JobID: job, RunAttempt: 1,
		Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
		CreatedAt: at, UpdatedAt: at, StatusChangedAt: at,
	}
}

func move(t *testing.T, s store.Store, inst *runner.Instance, statuses ...runner.Status) *runner.Instance {
	t.Helper()
	for _, to := range statuses {
		next, err := inst.Transition(to, time.Now())
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

// Everything a restarted `runfleet serve` relies on is still there after
// Close and Open: instances (deleted ones too), pool counters, the job
// ledger and its open index, the installation id.
func TestSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)

	running := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, admit(running, 2)); err != nil {
		t.Fatal(err)
	}
	running = move(t, s, running, runner.StatusCreating, runner.StatusRunning)
	gone := pendingInstance("p", 2)
	if err := s.CreateInstance(ctx, admit(gone, 2)); err != nil {
		t.Fatal(err)
	}
	gone = move(t, s, gone, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	open, served := openJob("p", 1, time.Now()), openJob("p", 2, time.Now())
	for _, j := range []*runner.Job{open, served} {
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	served = moveJob(t, s, served, runner.JobServed)
	id, err := s.InstallationID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })

	got, err := s2.GetInstance(ctx, running.Name)
	if err != nil || got.Status != runner.StatusRunning || got.Version != running.Version {
		t.Fatalf("running instance after restart: %+v, %v", got, err)
	}
	got, err = s2.GetInstance(ctx, gone.Name)
	if err != nil || got.Status != runner.StatusDeleted || !got.ExpiresAt.Equal(gone.ExpiresAt) {
		t.Fatalf("deleted instance after restart: %+v, %v", got, err)
	}
	if n, err := s2.PoolUsage(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("PoolUsage after restart = %d, %v; want 1", n, err)
	}
	live, err := s2.ListLiveInstances(ctx)
	if err != nil || len(live) != 1 || live[0].Name != running.Name {
		t.Fatalf("ListLiveInstances after restart = %v, %v", live, err)
	}
	if again, err := s2.InstallationID(ctx); err != nil || again != id {
		t.Fatalf("InstallationID after restart = %q, %v; want %q", again, err, id)
	}
	if got, err := s2.GetJob(ctx, served.Key()); err != nil || got.Status != runner.JobServed || !got.ExpiresAt.Equal(served.ExpiresAt) {
		t.Fatalf("served job after restart: %+v, %v", got, err)
	}
	if list, err := s2.ListOpenJobs(ctx); err != nil || len(list) != 1 || list[0].Key() != open.Key() {
		t.Fatalf("ListOpenJobs after restart = %v, %v; want [%s]", list, err, open.Key())
	}
	// The CAS chains continue where they stopped.
	move(t, s2, running, runner.StatusPendingDelete)
	moveJob(t, s2, served, runner.JobClosed)
}

// A second process pointed at the same state directory must fail to start,
// not wait forever and not share the file.
func TestSecondOpenFailsFast(t *testing.T) {
	_, path := openTemp(t)
	start := time.Now()
	s2, err := bolt.Open(path, bolt.WithOpenTimeout(50*time.Millisecond))
	if err == nil {
		_ = s2.Close()
		t.Fatal("second Open of a held file succeeded")
	}
	if !errors.Is(err, bbolterrors.ErrTimeout) {
		t.Fatalf("second Open: %v, want the lock timeout", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("second Open took %v", time.Since(start))
	}
}

func TestRejectsInstancesTheIndexesCannotHold(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for _, inst := range []*runner.Instance{
		{Name: "", Pool: "p", Status: runner.StatusPendingCreate},
		{Name: "x", Pool: "", Status: runner.StatusPendingCreate},
		{Name: "x", Pool: "a\x00b", Status: runner.StatusPendingCreate},
		{Name: "x", Pool: "p", Status: runner.StatusDeleted},
		{Name: "x", Pool: "p", Status: "bogus"},
	} {
		if err := s.CreateInstance(ctx, admit(inst, 10)); err == nil {
			t.Errorf("CreateInstance(%+v) succeeded", inst)
		}
	}
	if live, err := s.ListLiveInstances(ctx); err != nil || len(live) != 0 {
		t.Fatalf("ListLiveInstances = %v, %v; want none", live, err)
	}
}

func TestUpdateCannotMovePools(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	inst := pendingInstance("a", 1)
	if err := s.CreateInstance(ctx, admit(inst, 10)); err != nil {
		t.Fatal(err)
	}
	next := inst.Clone()
	next.Pool = "b"
	if err := s.UpdateInstance(ctx, inst.Status, next); err == nil {
		t.Fatal("update that moves an instance to another pool succeeded")
	}
	if n, _ := s.PoolUsage(ctx, "a"); n != 1 {
		t.Fatalf("PoolUsage(a) = %d, want 1", n)
	}
}

func TestPurgeExpiredDropsOnlyWhatIsDue(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, bolt.WithClock(clock.Now))

	live := pendingInstance("p", 1)
	early := pendingInstance("p", 2) // deleted with the default retention
	late := pendingInstance("p", 3)  // deleted with a longer one of its own
	for _, inst := range []*runner.Instance{live, early, late} {
		if err := s.CreateInstance(ctx, admit(inst, 10)); err != nil {
			t.Fatal(err)
		}
	}
	move(t, s, early, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	deleting := move(t, s, late, runner.StatusPendingDelete, runner.StatusDeleting)
	next, _ := deleting.Transition(runner.StatusDeleted, clock.Now())
	next.ExpiresAt = clock.Now().Add(store.DeletedRetention + 24*time.Hour)
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, next); err != nil {
		t.Fatal(err)
	}

	// Jobs: one kept an hour, one kept past the instances, and one still
	// open however long ago it was queued.
	shortJob, longJob := openJob("p", 10, clock.Now()), openJob("p", 11, clock.Now())
	openLong := openJob("p", 12, clock.Now().Add(-30*24*time.Hour))
	for _, j := range []*runner.Job{shortJob, longJob, openLong} {
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for j, keep := range map[*runner.Job]time.Duration{shortJob: time.Hour, longJob: store.DeletedRetention + 48*time.Hour} {
		closed, _ := j.Transition(runner.JobClosed, clock.Now())
		closed.ExpiresAt = clock.Now().Add(keep)
		if err := s.UpdateJob(ctx, runner.JobOpen, closed); err != nil {
			t.Fatal(err)
		}
	}

	purge := func(want int) {
		t.Helper()
		n, err := s.PurgeExpired(ctx)
		if err != nil || n != want {
			t.Fatalf("PurgeExpired = %d, %v; want %d", n, err, want)
		}
	}
	exists := func(name string) bool {
		_, err := s.GetInstance(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	jobExists := func(j *runner.Job) bool {
		_, err := s.GetJob(ctx, j.Key())
		if err != nil && !errors.Is(err, store.ErrJobNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	purge(0)
	clock.Advance(2 * time.Hour) // shortJob is due
	purge(1)
	if jobExists(shortJob) || !jobExists(longJob) || !jobExists(openLong) {
		t.Fatalf("after an hour: short=%v long=%v open=%v", jobExists(shortJob), jobExists(longJob), jobExists(openLong))
	}
	// Its key is free again.
	if err := s.CreateJob(ctx, openJob("p", 10, clock.Now())); err != nil {
		t.Fatalf("re-create job after purge: %v", err)
	}

	clock.Advance(store.DeletedRetention) // early is due
	purge(1)
	if exists(early.Name) || !exists(late.Name) || !exists(live.Name) {
		t.Fatalf("after the default retention: early=%v late=%v live=%v", exists(early.Name), exists(late.Name), exists(live.Name))
	}
	// Its name is free again.
	if err := s.CreateInstance(ctx, admit(pendingInstance("p", 2), 10)); err != nil {
		t.Fatalf("re-create after purge: %v", err)
	}

	clock.Advance(48 * time.Hour) // late and longJob are due
	purge(2)
	if exists(late.Name) || !exists(live.Name) || jobExists(longJob) || !jobExists(openLong) {
		t.Fatal("late and longJob should be gone, live and the open job kept")
	}
	if n, _ := s.PoolUsage(ctx, "p"); n != 2 {
		t.Fatalf("PoolUsage = %d, want 2 (live + re-created)", n)
	}
	if list, err := s.ListOpenJobs(ctx); err != nil || len(list) != 2 {
		t.Fatalf("ListOpenJobs = %d jobs, %v; want 2 (the old open one, the re-created one)", len(list), err)
	}
}

// A name re-created after its deleted record expired (but before a purge)
// must not be removed by the purge that was due for the old record.
func TestPurgeSparesRecreatedName(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, bolt.WithClock(clock.Now))

	first := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, admit(first, 10)); err != nil {
		t.Fatal(err)
	}
	move(t, s, first, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	clock.Advance(store.DeletedRetention + time.Minute)

	second := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, admit(second, 10)); err != nil {
		t.Fatalf("re-create over expired record: %v", err)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("PurgeExpired = %d, %v; want 0", n, err)
	}
	got, err := s.GetInstance(ctx, second.Name)
	if err != nil || got.Status != runner.StatusPendingCreate {
		t.Fatalf("re-created instance: %+v, %v", got, err)
	}
}

func TestArrivalsContract(t *testing.T) {
	storetest.RunArrivals(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}
