package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
)

// errDatabaseDown is what a write returns while the database restarts.
var errDatabaseDown = errors.New("simulated: the database is restarting")

// outageStore fails the one instance write from status from to status to,
// once, as a database restarting between a worker's two writes would: the
// worker's claim is durable, its outcome is not.
type outageStore struct {
	store.Store
	from, to runner.Status
	fired    *atomic.Bool
}

func (s *outageStore) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	if from == s.from && next.Status == s.to && s.fired.CompareAndSwap(false, true) {
		return errDatabaseDown
	}
	return s.Store.UpdateInstance(ctx, from, next)
}

// workBounded handles the queue's due messages as serve's workers do: each
// receive's work bounded by the message's visibility (a minute here, on
// the real clock the deadline is read on), a failed one left for
// redelivery, until none is due.
func workBounded(t *testing.T, w *enginetest.World) (failed int) {
	t.Helper()
	const visibility = time.Minute
	ctx := context.Background()
	for {
		msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: visibility})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return failed
		}
		for _, m := range msgs {
			wctx, cancel := context.WithTimeout(ctx, visibility)
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

// Issue #32: a worker whose final write fails leaves its message for
// redelivery; that redelivery finds the instance still claimed by the same
// message and finishes the work — it is not "stale" — so the instance moves
// on at the redelivery, not at the reconciler's timeout.
func TestRedeliveryAfterAFailedFinalWriteResumesTheWork(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to runner.Status
		// start brings the instance to the work whose outcome is lost.
		start func(t *testing.T, w *enginetest.World) string
		want  runner.Status
	}{
		{"create", runner.StatusCreating, runner.StatusRunning, func(t *testing.T, w *enginetest.World) string {
			w.Deliver(enginetest.Event(runner.ActionQueued, 32_101, ""))
			return enginetest.InstanceName(32_101)
		}, runner.StatusRunning},
		{"delete", runner.StatusDeleting, runner.StatusDeleted, func(t *testing.T, w *enginetest.World) string {
			w.Deliver(enginetest.Event(runner.ActionQueued, 32_102, ""))
			name := enginetest.InstanceName(32_102)
			if failed := workBounded(t, w); failed != 0 {
				t.Fatalf("%d messages failed before the outage", failed)
			}
			w.Deliver(enginetest.Event(runner.ActionInProgress, 32_102, name))
			w.Deliver(enginetest.Event(runner.ActionCompleted, 32_102, name))
			return name
		}, runner.StatusDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testclock.At(time.Date(2026, 4, 6, 8, 0, 0, 0, time.UTC))
			fired := &atomic.Bool{}
			h := newHeard()
			w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, WrapStore: func(s store.Store) store.Store {
				return &outageStore{Store: s, from: tc.from, to: tc.to, fired: fired}
			}, Engine: func(o *engine.Options) { o.Observer = h }})
			name := tc.start(t, w)
			if failed := workBounded(t, w); failed != 1 || !fired.Load() {
				t.Fatalf("the outage was not met (failed messages %d)", failed)
			}
			if got := w.Instance(name); got.Status != tc.from {
				t.Fatalf("after the failed write: %s, want %s", got.Status, tc.from)
			}
			// The message comes back after its visibility, and is taken
			// over once the failed receive's bound (its deadline and the
			// clean-up grace) has passed: long before the reconciler's
			// timeout for tc.from.
			claimed := w.Instance(name)
			if claimed.ClaimUntil.IsZero() {
				t.Fatalf("the claim has no bound")
			}
			clock.AdvanceTo(claimed.ClaimUntil)
			takeoverAt := clock.Now()
			for range 3 {
				workBounded(t, w)
				clock.Advance(time.Second)
			}
			got := w.Instance(name)
			if got.Status != tc.want {
				t.Fatalf("after the redelivery: %s, want %s\nlog:\n%s", got.Status, tc.want, w.Logs.Tail(30))
			}
			wantHeard := fmt.Sprintf("%s %s redelivery %s", name, tc.from, takeoverAt.Sub(claimed.StatusChangedAt))
			if got := h.takenOver(); !slices.Equal(got, []string{wantHeard}) {
				t.Errorf("takeovers heard: %q, want [%q]", got, wantHeard)
			}
			// Done once: one machine and one runner of the name when it runs,
			// none when it is deleted.
			want := 0
			if tc.want == runner.StatusRunning {
				want = 1
			}
			if n := len(w.Provider.Machines()); n != want {
				t.Errorf("%d machines, want %d", n, want)
			}
			runners := 0
			for _, r := range w.GitHub.Runners() {
				if r.Name == name {
					runners++
				}
			}
			if runners != want {
				t.Errorf("%d runners named %s, want %d", runners, name, want)
			}
		})
	}
}

// Issue #32: a database restart of a few seconds fails a serve worker's
// final write. The worker does the message again itself once the store
// answers — the claim is its message's own, so the work is taken over, not
// found stale — and the instance moves on without waiting for the
// message's redelivery (an hour away here: only the worker's own repeat
// can finish it).
func TestWorkerDoesAFailedMessageAgainWhileItIsStillItsOwn(t *testing.T) {
	// Real time: the retried create is sent with a delay the workers must
	// see pass; nothing here measures it.
	fired := &atomic.Bool{}
	w := enginetest.NewWorld(t, enginetest.Options{WorkerVisibility: time.Hour, WrapStore: func(s store.Store) store.Store {
		return &outageStore{Store: s, from: runner.StatusCreating, to: runner.StatusRunning, fired: fired}
	}})
	w.StartWorkers(1)
	w.Deliver(enginetest.Event(runner.ActionQueued, 32_201, ""))
	name := enginetest.InstanceName(32_201)
	w.WaitFor("the instance to run after the failed write", func() bool {
		return fired.Load() && w.Instance(name).Status == runner.StatusRunning
	})
	w.Drain()
	if n := len(w.Provider.Machines()); n != 1 {
		t.Fatalf("%d machines, want 1", n)
	}
}

// A redelivery does not take over while its message's earlier receive may
// still be finishing — a worker past its visibility is still inside its
// bound for a clean-up grace, and a create taken over under a live
// provider call could leave two machines of one name — and does once the
// claim's bound has passed, on the engine's clock.
func TestRedeliveryWaitsOutTheEarlierReceivesBound(t *testing.T) {
	clock := testclock.At(time.Date(2026, 4, 6, 10, 0, 0, 0, time.UTC))
	fired := &atomic.Bool{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, WrapStore: func(s store.Store) store.Store {
		return &outageStore{Store: s, from: runner.StatusCreating, to: runner.StatusRunning, fired: fired}
	}})
	w.Deliver(enginetest.Event(runner.ActionQueued, 32_301, ""))
	name := enginetest.InstanceName(32_301)
	// handleOnce receives the create message and does it as a worker bound
	// by a deadline would; it reports the handler's error.
	handleOnce := func() error {
		t.Helper()
		ctx := context.Background()
		msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: 50 * time.Millisecond})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("receive: %d messages, %v; want the create", len(msgs), err)
		}
		m := msgs[0]
		wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		err = w.Engine.HandleMessage(engine.WithDelivery(wctx, m.ID, m.ReceiveCount), m.Body)
		if err == nil {
			if err := w.Queue.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		return err
	}
	if err := handleOnce(); err == nil || !fired.Load() {
		t.Fatalf("the first receive: %v, want the outage's failure", err)
	}
	claimed := w.Instance(name)
	if claimed.Status != runner.StatusCreating || claimed.ClaimUntil.Before(clock.Now().Add(10*time.Minute)) {
		t.Fatalf("after the failed write: %s claimed until %s, want creating, bound past the worker's deadline", claimed.Status, claimed.ClaimUntil)
	}

	clock.Advance(time.Second)
	if err := handleOnce(); err == nil {
		t.Fatal("a redelivery inside the earlier receive's bound took the create over")
	}
	if got := w.Instance(name); got.Status != runner.StatusCreating || got.Version != claimed.Version {
		t.Fatalf("a redelivery inside the bound wrote %s (version %d, was %d)", got.Status, got.Version, claimed.Version)
	}

	clock.AdvanceTo(claimed.ClaimUntil)
	if err := handleOnce(); err != nil {
		t.Fatalf("the redelivery past the bound: %v", err)
	}
	clock.Advance(time.Second) // the retried create's backoff
	w.Drain()
	if got := w.Instance(name); got.Status != runner.StatusRunning {
		t.Fatalf("after the takeover: %s, want running", got.Status)
	}
	if n := len(w.Provider.Machines()); n != 1 {
		t.Fatalf("%d machines, want 1", n)
	}
}
