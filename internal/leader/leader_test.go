package leader

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// These tests run in a synctest bubble: time is fake and moves only when
// every goroutine waits, so TTLs of minutes pass at once and the order of
// events is exact. The lease decisions are the domain's (store.NewLeases
// over one map); the adapters' compare-and-set is the store contract's
// business (storetest), and serve's test runs this over PostgreSQL.

const ttl = 90 * time.Second

// memLeases is store.NewLeases over a map under a mutex.
func memLeases() store.Leases {
	var mu sync.Mutex
	rows := map[string]runner.Lease{}
	get := func(_ context.Context, name string) (*runner.Lease, error) {
		mu.Lock()
		defer mu.Unlock()
		l, ok := rows[name]
		if !ok {
			l = runner.Lease{Name: name}
		}
		return &l, nil
	}
	change := func(ctx context.Context, name string, decide func(*runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
		mu.Lock()
		defer mu.Unlock()
		cur, ok := rows[name]
		if !ok {
			cur = runner.Lease{Name: name}
		}
		next, err := decide(&cur)
		if err != nil || next == nil {
			return nil, err
		}
		next.Version = cur.Version + 1
		rows[name] = *next
		out := *next
		return &out, nil
	}
	return store.NewLeases(change, get)
}

// severable is one process's way to the store: once cut, every call fails
// as a database that no longer answers would.
type severable struct {
	store.Leases
	cut atomic.Bool
}

var errUnreachable = errors.New("database unreachable")

func (s *severable) RenewLease(ctx context.Context, held *runner.Lease, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	if s.cut.Load() {
		return nil, errUnreachable
	}
	return s.Leases.RenewLease(ctx, held, ttl, now)
}

func (s *severable) ReleaseLease(ctx context.Context, held *runner.Lease) error {
	if s.cut.Load() {
		return errUnreachable
	}
	return s.Leases.ReleaseLease(ctx, held)
}

// tracker records which holders' work runs, and fails the test when two
// run at once.
type tracker struct {
	t       *testing.T
	mu      sync.Mutex
	running map[string]bool
	started []startedAt
}

type startedAt struct {
	holder string
	at     time.Time
}

func newTracker(t *testing.T) *tracker { return &tracker{t: t, running: map[string]bool{}} }

// work is what holder runs while it leads: nothing but being counted.
func (k *tracker) work(holder string) func(context.Context) {
	return func(ctx context.Context) {
		k.mu.Lock()
		for other := range k.running {
			k.t.Errorf("%s starts while %s runs", holder, other)
		}
		k.running[holder] = true
		k.started = append(k.started, startedAt{holder, time.Now()})
		k.mu.Unlock()
		<-ctx.Done()
		k.mu.Lock()
		delete(k.running, holder)
		k.mu.Unlock()
	}
}

func (k *tracker) starts() []startedAt {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]startedAt(nil), k.started...)
}

// waitStarts sleeps (fake time) until n works have started.
func (k *tracker) waitStarts(n int) []startedAt {
	for len(k.starts()) < n {
		time.Sleep(time.Second)
	}
	return k.starts()
}

func (k *tracker) runningNow() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for h := range k.running {
		out = append(out, h)
	}
	return out
}

// process is one Run, stopped by its cancel.
type process struct {
	cancel context.CancelFunc
	done   chan error
}

func start(leases store.Leases, holder string, work func(context.Context)) *process {
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{cancel: cancel, done: make(chan error, 1)}
	opts := Options{Leases: leases, Name: "reconciler", Holder: holder, TTL: ttl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() { p.done <- Run(ctx, opts, work) }()
	return p
}

func (p *process) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	if err := <-p.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestOneOfThreeRunsAndKeepsRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases, k := memLeases(), newTracker(t)
		var procs []*process
		for _, h := range []string{"a", "b", "c"} {
			procs = append(procs, start(leases, h, k.work(h)))
		}
		time.Sleep(10 * ttl)
		synctest.Wait()
		if got := k.runningNow(); len(got) != 1 {
			t.Fatalf("running after 10 TTLs: %v, want exactly one", got)
		}
		if s := k.starts(); len(s) != 1 {
			t.Errorf("leadership changed hands among live processes: %+v", s)
		}
		for _, p := range procs {
			p.stop(t)
		}
	})
}

func TestStandbyTakesOverWhenTheHolderDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newTracker(t)
		shared := memLeases()
		doomed := &severable{Leases: shared}
		first := start(doomed, "first", k.work("first"))
		synctest.Wait()
		// The standby starts out of step with the holder's renewals, as a
		// replica started later does: its tries do not fall on the expiry
		// by chance.
		time.Sleep(7 * time.Second)
		second := start(shared, "second", k.work("second"))
		synctest.Wait()
		held, _ := shared.GetLease(context.Background(), "reconciler")
		if held.Holder != "first" {
			t.Fatalf("lease held by %q, want first", held.Holder)
		}
		// first dies: it never renews nor releases again. (Its work stops
		// too, at its own deadline; a killed process's would stop at once.)
		doomed.cut.Store(true)
		died := time.Now()
		starts := k.waitStarts(2)
		took := starts[1]
		if took.holder != "second" {
			t.Fatalf("started: %+v", starts)
		}
		// The bound the README states: at the dead holding's expiry, so
		// within the TTL of the death (issue #32: not a margin past it).
		if !took.at.Equal(held.ExpiresAt) || took.at.Sub(died) > ttl {
			t.Errorf("second took over at %s after the death, the dead holding expiring at %s after it; want at the expiry, within the TTL",
				took.at.Sub(died), held.ExpiresAt.Sub(died))
		}
		first.stop(t)
		second.stop(t)
	})
}

func TestHolderThatCannotRenewStopsBeforeItsLeaseExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memLeases()
		cut := &severable{Leases: shared}
		stopped := make(chan time.Time, 1)
		p := start(cut, "a", func(ctx context.Context) {
			<-ctx.Done()
			stopped <- time.Now()
		})
		synctest.Wait()
		held, _ := shared.GetLease(context.Background(), "reconciler")
		cut.cut.Store(true)
		stoppedAt := <-stopped
		if !stoppedAt.Before(held.ExpiresAt) {
			t.Errorf("work stopped at %v, want before the lease's expiry %v", stoppedAt, held.ExpiresAt)
		}
		p.stop(t)
	})
}

func TestLostLeaseStopsTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases := memLeases()
		var stopped atomic.Bool
		p := start(leases, "a", func(ctx context.Context) {
			<-ctx.Done()
			stopped.Store(true)
		})
		synctest.Wait()
		// Someone else writes the lease (an operator's release, a holder
		// that judged it expired by a fast clock): a's version is stale.
		cur, _ := leases.GetLease(context.Background(), "reconciler")
		if err := leases.ReleaseLease(context.Background(), cur); err != nil {
			t.Fatal(err)
		}
		if _, err := leases.AcquireLease(context.Background(), "reconciler", "intruder", ttl, time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl / 3)
		synctest.Wait()
		if !stopped.Load() {
			t.Error("work still runs after its lease was taken")
		}
		p.stop(t)
	})
}

func TestShutdownReleasesTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases, k := memLeases(), newTracker(t)
		first := start(leases, "first", k.work("first"))
		synctest.Wait()
		second := start(leases, "second", k.work("second"))
		synctest.Wait()
		stoppedAt := time.Now()
		first.stop(t)
		if l, _ := leases.GetLease(context.Background(), "reconciler"); l.Holder != "" {
			t.Errorf("after a graceful stop the lease is %+v, want free", l)
		}
		starts := k.waitStarts(2)
		// Released, not expired: the standby takes over at its next try.
		if waited := starts[1].at.Sub(stoppedAt); waited > ttl/3 {
			t.Errorf("second took over %s after a release, want within one renewal period", waited)
		}
		second.stop(t)
	})
}

func TestWorkThatReturnsIsRunAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		p := start(memLeases(), "a", func(context.Context) { runs.Add(1) })
		time.Sleep(ttl)
		synctest.Wait()
		if n := runs.Load(); n < 2 {
			t.Errorf("work ran %d times in a TTL, want again after it returned", n)
		}
		p.stop(t)
	})
}

func TestRunRefusesIncompleteOptions(t *testing.T) {
	err := Run(context.Background(), Options{Name: "reconciler", Holder: "a", TTL: ttl}, func(context.Context) {})
	if err == nil {
		t.Error("Run without a store: no error")
	}
}

func TestHolderIDsDiffer(t *testing.T) {
	a, b := HolderID(), HolderID()
	if a == b || a == "" {
		t.Errorf("HolderID: %q and %q", a, b)
	}
}
