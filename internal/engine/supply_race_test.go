package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// rivalFirst is a store in which another worker wins a race on the job:
// before the first admission that races (races), that worker's write
// (rival) is committed, so the admission loses to it.
type rivalFirst struct {
	store.Store
	fired *atomic.Bool
	races func(a store.Admission) bool
	rival func(ctx context.Context, s store.Store, a store.Admission, body []byte) error
}

func (s *rivalFirst) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	if a.Job != nil && s.races(a) && s.fired.CompareAndSwap(false, true) {
		if err := s.rival(ctx, s.Store, a, body); err != nil {
			return err
		}
	}
	return s.Store.(store.Outbox).CreateInstanceAndSend(ctx, a, body)
}

// rivalWorld is a world whose store lets the rival win once; fired says
// whether it did.
func rivalWorld(t *testing.T, races func(store.Admission) bool, rival func(context.Context, store.Store, store.Admission, []byte) error) (*enginetest.World, *atomic.Bool) {
	fired := new(atomic.Bool)
	w := enginetest.NewWorld(t, enginetest.Options{
		WrapStore: func(s store.Store) store.Store {
			return &rivalFirst{Store: s, fired: fired, races: races, rival: rival}
		},
	})
	return w, fired
}

// TestSupplyReadsTheJobAgainAfterLosingARace: a job whose first machine
// failed to create is served again, and that admission of its next
// instance loses a race on the job record to a second worker serving the
// same job (in the README tour: the failed create's retry and the forced
// delete's), which recorded GitHub's answer first. The loser must read the
// job again and decide again — one more write, not sixteen conflicts
// against the version it read first.
func TestSupplyReadsTheJobAgainAfterLosingARace(t *testing.T) {
	storedJob := func(a store.Admission) bool { return a.JobFrom != "" }
	recordAnswer := func(ctx context.Context, s store.Store, a store.Admission, _ []byte) error {
		cur, err := s.GetJob(ctx, a.Job.Key())
		if err != nil {
			return err
		}
		next := cur.Clone()
		next.UpdatedAt = cur.UpdatedAt.Add(time.Millisecond)
		return s.UpdateJob(ctx, cur.Status, next)
	}
	w, fired := rivalWorld(t, storedJob, recordAnswer)
	w.Recorder.FailCreates(3, false) // every attempt of the first instance (MaxCreateAttempts)
	w.Deliver(enginetest.Event(runner.ActionQueued, 2401, ""))
	// The next instance waits out the job's backoff (a delayed
	// serve_job): drain until it is made. A loser deciding again from the
	// copy it lost with gives up ("gave up after 16 conflicting writes"),
	// and only the reconciler would make the instance.
	second := w.Job(2401).InstanceFor(2)
	enginetest.Eventually(t, "the job's next instance after the lost race", func() bool {
		w.Drain()
		_, err := w.Store.GetInstance(context.Background(), second)
		return err == nil
	}, func() string { return w.Logs.Tail(20) })
	if !fired.Load() {
		t.Fatal("the rival write never ran: the admission did not lose a race")
	}
	if strings.Contains(w.Logs.String(), "conflicting writes") {
		t.Errorf("a lost race was retried from the job it lost with:\n%s", w.Logs.Tail(20))
	}
	if job := w.Job(2401); job.Made != 2 || job.Instance != second {
		t.Errorf("job = made %d, instance %q; want 2 and %s", job.Made, job.Instance, second)
	}
}

// TestTwoDeliveriesOfANewJobMakeOneInstance: two deliveries of one new
// job handled at the same moment (GitHub's redelivery, or the reconciler
// recovering it) both admit its first instance. The loser must read the
// job the winner stored and find it covered, not retry from its own
// unstored copy, whose every create finds the winner's record.
func TestTwoDeliveriesOfANewJobMakeOneInstance(t *testing.T) {
	newJob := func(a store.Admission) bool { return a.JobFrom == "" }
	sameAdmission := func(ctx context.Context, s store.Store, a store.Admission, body []byte) error {
		rival := a
		rival.Instance, rival.Job = a.Instance.Clone(), a.Job.Clone()
		return s.(store.Outbox).CreateInstanceAndSend(ctx, rival, body)
	}
	w, fired := rivalWorld(t, newJob, sameAdmission)
	out := w.Deliver(enginetest.Event(runner.ActionQueued, 2402, ""))
	if !fired.Load() {
		t.Fatal("the rival admission never ran")
	}
	if out.Result != engine.ResultDuplicate || out.Instance != enginetest.InstanceName(2402) {
		t.Errorf("the losing delivery = %+v; want %s, covered by %s", out, engine.ResultDuplicate, enginetest.InstanceName(2402))
	}
	if live := w.Live(); len(live) != 1 {
		t.Errorf("%d live instances, want the winner's one", len(live))
	}
}
