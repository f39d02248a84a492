package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
)

// TestMain stops the PostgreSQL server the takeover tests start.
func TestMain(m *testing.M) { testenv.Main(m, pgtest.Stop) }

// livenessTTL is a serve replica's (serve.livenessTTL).
const livenessTTL = leader.LivenessTTL

// replicaAt is one serve replica on the shared store: its holder id and
// its liveness lease, taken at the clock's now.
func replicaAt(t *testing.T, st store.Store, clock *testclock.Clock, holder string) context.Context {
	t.Helper()
	if _, err := st.AcquireLease(context.Background(), leader.LivenessLease(holder), holder, livenessTTL, clock.Now()); err != nil {
		t.Fatalf("liveness of %s: %v", holder, err)
	}
	return engine.WithHolder(context.Background(), holder, context.Background())
}

// Issue #32: a replica killed between a worker's two writes — its claim is
// in the real PostgreSQL store, its outcome never is, and it renews its
// liveness no more — has its work taken over by a live replica as soon as
// its liveness lease expires (livenessTTL), not at the message's
// redelivery: a create recovered by name (its machine and runner removed,
// the create retried: one machine and one runner in the end), a delete
// resumed. Two live replicas scanning at once take it over once.
func TestAReplicaKilledBetweenTwoWritesIsTakenOverOnPostgres(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to runner.Status
		job      int64
		// start brings the instance to the work the kill interrupts.
		start func(t *testing.T, w *enginetest.World, job int64, work func())
		// after is the status the takeover leaves; want the final one.
		after, want runner.Status
		machines    int
	}{
		{"create", runner.StatusCreating, runner.StatusRunning, 32_501, func(t *testing.T, w *enginetest.World, job int64, _ func()) {
			w.Deliver(enginetest.Event(runner.ActionQueued, job, ""))
		}, runner.StatusPendingCreate, runner.StatusRunning, 1},
		{"delete", runner.StatusDeleting, runner.StatusDeleted, 32_502, func(t *testing.T, w *enginetest.World, job int64, work func()) {
			w.Deliver(enginetest.Event(runner.ActionQueued, job, ""))
			work()
			name := enginetest.InstanceName(job)
			w.Deliver(enginetest.Event(runner.ActionInProgress, job, name))
			w.Deliver(enginetest.Event(runner.ActionCompleted, job, name))
		}, runner.StatusPendingDelete, runner.StatusDeleted, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testclock.At(time.Date(2026, 4, 6, 9, 0, 0, 0, time.UTC))
			ctx := context.Background()
			pg, err := postgres.Open(ctx, pgtest.NewSchema(t), postgres.WithClock(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pg.Close() })
			killed := &atomic.Bool{}
			h := newHeard()
			w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, SeparateQueue: true, Engine: func(o *engine.Options) {
				o.Store = &outageStore{Store: pg, from: tc.from, to: tc.to, fired: killed}
				o.Observer = h
			}})
			get := func(name string) *runner.Instance {
				t.Helper()
				inst, err := pg.GetInstance(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				return inst
			}
			// work does every due message as replica r's workers would.
			work := func(r context.Context) (failed int) {
				for {
					msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: 5 * time.Minute})
					if err != nil {
						t.Fatal(err)
					}
					if len(msgs) == 0 {
						return failed
					}
					for _, m := range msgs {
						wctx, cancel := context.WithTimeout(r, 5*time.Minute)
						err := w.Engine.HandleMessage(engine.WithDelivery(wctx, m.ID, m.ReceiveCount), m.Body)
						cancel()
						if err != nil {
							failed++
							continue
						}
						if err := w.Queue.Ack(ctx, m); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			a := replicaAt(t, pg, clock, "replica-a")
			tc.start(t, w, tc.job, func() { work(a) })
			name := enginetest.InstanceName(tc.job)
			// Replica a does the work; its final write never lands: killed.
			if failed := work(a); failed != 1 || !killed.Load() {
				t.Fatalf("the kill was not met (failed messages %d)", failed)
			}
			held := get(name)
			if held.Status != tc.from || claimHolderOf(held.Claim) != "replica-a" {
				t.Fatalf("after the kill: %s claimed %q, want %s claimed by replica-a", held.Status, held.Claim, tc.from)
			}
			killedAt := clock.Now()
			b := replicaAt(t, pg, clock, "replica-b")
			c := replicaAt(t, pg, clock, "replica-c")
			scan := func() int {
				var wg sync.WaitGroup
				var taken atomic.Int64
				for _, r := range []context.Context{b, c} {
					wg.Go(func() {
						n, err := w.Engine.TakeOverDeadWork(r)
						if err != nil {
							t.Error(err)
						}
						taken.Add(int64(n))
					})
				}
				wg.Wait()
				return int(taken.Load())
			}
			// While a's liveness holds, its claim is a's.
			clock.Advance(livenessTTL - time.Second)
			if n := scan(); n != 0 || get(name).Status != tc.from {
				t.Fatalf("taken over while the holder was alive: %d, %s", n, get(name).Status)
			}
			// Its lease expires: b and c renewed theirs, a did not.
			for _, r := range []string{"replica-b", "replica-c"} {
				l, err := pg.GetLease(ctx, leader.LivenessLease(r))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := pg.RenewLease(ctx, l, livenessTTL, clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			clock.AdvanceTo(killedAt.Add(livenessTTL))
			if n := scan(); n != 1 {
				t.Fatalf("%d takeovers, want 1\nlog:\n%s", n, w.Logs.Tail(30))
			}
			if got := get(name); got.Status != tc.after {
				t.Fatalf("after the takeover: %s, want %s\nlog:\n%s", got.Status, tc.after, w.Logs.Tail(30))
			}
			wantHeard := fmt.Sprintf("%s %s liveness %s", name, tc.from, clock.Now().Sub(held.StatusChangedAt))
			if got := h.takenOver(); !slices.Equal(got, []string{wantHeard}) {
				t.Errorf("takeovers heard %q, want [%q]", got, wantHeard)
			}
			// The work goes on under b: the create retried, the delete done.
			for range 5 {
				clock.Advance(10 * time.Second)
				work(b)
			}
			if got := get(name); got.Status != tc.want {
				t.Fatalf("in the end: %s, want %s\nlog:\n%s", got.Status, tc.want, w.Logs.Tail(30))
			}
			if n := len(w.Provider.Machines()); n != tc.machines {
				t.Errorf("%d machines, want %d", n, tc.machines)
			}
			runners := 0
			for _, r := range w.GitHub.Runners() {
				if r.Name == name {
					runners++
				}
			}
			if runners != tc.machines {
				t.Errorf("%d runners named %s, want %d", runners, name, tc.machines)
			}
		})
	}
}

// claimHolderOf is the holder a claim names, after its '@'.
func claimHolderOf(claim string) string {
	for i := len(claim) - 1; i >= 0; i-- {
		if claim[i] == '@' {
			return claim[i+1:]
		}
	}
	return ""
}

// A scan's own takeover whose final write fails (the database restarting)
// is done again by the same replica's next scan, not left until the
// claim's end (a provider timeout away): scans run one after the other,
// so the earlier one has returned.
func TestAScanDoesItsOwnFailedTakeoverAgain(t *testing.T) {
	clock := testclock.At(time.Date(2026, 4, 6, 11, 0, 0, 0, time.UTC))
	fired := &atomic.Bool{}
	// The first creating -> pending_create write fails: the takeover's.
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, WrapStore: func(s store.Store) store.Store {
		return &outageStore{Store: s, from: runner.StatusCreating, to: runner.StatusPendingCreate, fired: fired}
	}})
	ctx := context.Background()
	name := enginetest.InstanceName(32_601)
	w.Deliver(enginetest.Event(runner.ActionQueued, 32_601, ""))
	// Replica a claims the create and dies before its outcome: its claim
	// stays, its liveness is never renewed.
	replicaAt(t, w.Store, clock, "replica-a")
	msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: 5 * time.Minute})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %d, %v", len(msgs), err)
	}
	inst := w.Instance(name)
	claimed := inst.Clone()
	claimed.Status, claimed.CreateAttempt = runner.StatusCreating, 1
	claimed.Claim, claimed.ClaimUntil = msgs[0].ID+"#1@replica-a", clock.Now().Add(5*time.Minute)
	if err := w.Store.UpdateInstance(ctx, inst.Status, claimed); err != nil {
		t.Fatal(err)
	}
	b := replicaAt(t, w.Store, clock, "replica-b")
	clock.Advance(livenessTTL)
	if l, err := w.Store.GetLease(ctx, leader.LivenessLease("replica-b")); err != nil {
		t.Fatal(err)
	} else if _, err := w.Store.RenewLease(ctx, l, livenessTTL, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Engine.TakeOverDeadWork(b); err == nil || !fired.Load() {
		t.Fatalf("the takeover's write did not fail: %v", err)
	}
	if got := w.Instance(name); got.Status != runner.StatusCreating || got.Claim != "-#0@replica-b" {
		t.Fatalf("after the failed takeover: %s claimed %q", got.Status, got.Claim)
	}
	// The next scan, 3 s later: b's own takeover is done again.
	clock.Advance(3 * time.Second)
	if n, err := w.Engine.TakeOverDeadWork(b); err != nil || n != 1 {
		t.Fatalf("second scan: %d takeovers, %v", n, err)
	}
	if got := w.Instance(name); got.Status != runner.StatusPendingCreate {
		t.Fatalf("after the second scan: %s, want pending_create", got.Status)
	}
}
