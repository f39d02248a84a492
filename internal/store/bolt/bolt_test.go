package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bbolterrors "go.etcd.io/bbolt/errors"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/store/storetest"
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
// Close and Open: instances (deleted ones too), pool counters, deliveries.
func TestSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)

	running := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, running, 2); err != nil {
		t.Fatal(err)
	}
	running = move(t, s, running, runner.StatusCreating, runner.StatusRunning)
	gone := pendingInstance("p", 2)
	if err := s.CreateInstance(ctx, gone, 2); err != nil {
		t.Fatal(err)
	}
	gone = move(t, s, gone, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	if fresh, err := s.MarkDelivery(ctx, "delivery-1", time.Hour); err != nil || !fresh {
		t.Fatalf("MarkDelivery = %v, %v", fresh, err)
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
	if fresh, err := s2.MarkDelivery(ctx, "delivery-1", time.Hour); err != nil || fresh {
		t.Fatalf("MarkDelivery of a remembered id after restart = %v, %v; want false", fresh, err)
	}
	// The CAS chain continues where it stopped.
	move(t, s2, running, runner.StatusPendingDelete)
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
		if err := s.CreateInstance(ctx, inst, 10); err == nil {
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
	if err := s.CreateInstance(ctx, inst, 10); err != nil {
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

// fakeClock is a settable clock for retention tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestPurgeExpiredDropsOnlyWhatIsDue(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTemp(t, bolt.WithClock(clock.now))

	live := pendingInstance("p", 1)
	early := pendingInstance("p", 2) // deleted with the default retention
	late := pendingInstance("p", 3)  // deleted with a longer one of its own
	for _, inst := range []*runner.Instance{live, early, late} {
		if err := s.CreateInstance(ctx, inst, 10); err != nil {
			t.Fatal(err)
		}
	}
	move(t, s, early, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	deleting := move(t, s, late, runner.StatusPendingDelete, runner.StatusDeleting)
	next, _ := deleting.Transition(runner.StatusDeleted, clock.now())
	next.ExpiresAt = clock.now().Add(store.DeletedRetention + 24*time.Hour)
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, next); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d-short", "d-long"} {
		ttl := time.Hour
		if id == "d-long" {
			ttl = store.DeletedRetention + 48*time.Hour
		}
		if _, err := s.MarkDelivery(ctx, id, ttl); err != nil {
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

	purge(0)
	clock.advance(2 * time.Hour) // d-short is due
	purge(1)
	if fresh, _ := s.MarkDelivery(ctx, "d-long", time.Hour); fresh {
		t.Fatal("d-long forgotten early")
	}

	clock.advance(store.DeletedRetention) // early is due
	purge(1)
	if exists(early.Name) || !exists(late.Name) || !exists(live.Name) {
		t.Fatalf("after the default retention: early=%v late=%v live=%v", exists(early.Name), exists(late.Name), exists(live.Name))
	}
	// Its name is free again.
	if err := s.CreateInstance(ctx, pendingInstance("p", 2), 10); err != nil {
		t.Fatalf("re-create after purge: %v", err)
	}

	clock.advance(48 * time.Hour) // late and d-long are due
	purge(2)
	if exists(late.Name) || !exists(live.Name) {
		t.Fatal("late should be gone, live kept")
	}
	if fresh, _ := s.MarkDelivery(ctx, "d-long", time.Hour); !fresh {
		t.Fatal("d-long still marked after purge")
	}
	if n, _ := s.PoolUsage(ctx, "p"); n != 2 {
		t.Fatalf("PoolUsage = %d, want 2 (live + re-created)", n)
	}
}

// A name re-created after its deleted record expired (but before a purge)
// must not be removed by the purge that was due for the old record.
func TestPurgeSparesRecreatedName(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTemp(t, bolt.WithClock(clock.now))

	first := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, first, 10); err != nil {
		t.Fatal(err)
	}
	move(t, s, first, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	clock.advance(store.DeletedRetention + time.Minute)

	second := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, second, 10); err != nil {
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
