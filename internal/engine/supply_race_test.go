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

// rivalBeforeAdmission stands for a second worker serving the same job (in
// the README tour: the failed create's retry and the forced delete's): just
// before the first admission of a job already stored, it writes the job
// itself, as that worker's record of GitHub's answer would, so the
// admission loses its compare-and-set.
type rivalBeforeAdmission struct {
	store.Store
	fired *atomic.Bool
}

func (s *rivalBeforeAdmission) rival(ctx context.Context, a store.Admission) error {
	if a.Job == nil || a.JobFrom == "" || !s.fired.CompareAndSwap(false, true) {
		return nil
	}
	cur, err := s.Store.GetJob(ctx, a.Job.Key())
	if err != nil {
		return err
	}
	next := cur.Clone()
	next.UpdatedAt = cur.UpdatedAt.Add(time.Millisecond)
	return s.Store.UpdateJob(ctx, cur.Status, next)
}

func (s *rivalBeforeAdmission) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	if err := s.rival(ctx, a); err != nil {
		return err
	}
	return s.Store.(store.Outbox).CreateInstanceAndSend(ctx, a, body)
}

// TestSupplyReadsTheJobAgainAfterLosingARace: a job whose first machine
// failed to create is served again, and that admission of its next
// instance loses a race on the job record. The loser must read the job
// again and decide again — one more write, not sixteen conflicts against
// the version it read first and a message left for redelivery.
func TestSupplyReadsTheJobAgainAfterLosingARace(t *testing.T) {
	fired := new(atomic.Bool)
	w := enginetest.NewWorld(t, enginetest.Options{
		WrapStore: func(s store.Store) store.Store {
			return &rivalBeforeAdmission{Store: s, fired: fired}
		},
	})
	w.Recorder.FailCreates(3, false) // every attempt of the first instance (MaxCreateAttempts)
	w.Deliver(enginetest.Event(runner.ActionQueued, 2401, ""))
	// The next instance waits out the job's backoff (a delayed
	// serve_job): drain until it is made. A loser deciding again from
	// the copy it lost with fails that message ("gave up after 16
	// conflicting writes"), and Drain fails the test.
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

// duplicateBeforeFirstAdmission stands for a second delivery of the same
// queued job handled at the same moment (GitHub's redelivery, or the
// reconciler recovering it): just before the first admission of a job not
// stored yet, the same admission is made by the rival, job and instance.
type duplicateBeforeFirstAdmission struct {
	store.Store
	fired *atomic.Bool
}

func (s *duplicateBeforeFirstAdmission) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	outbox := s.Store.(store.Outbox)
	if a.JobFrom == "" && a.Job != nil && s.fired.CompareAndSwap(false, true) {
		rival := a
		rival.Instance, rival.Job = a.Instance.Clone(), a.Job.Clone()
		if err := outbox.CreateInstanceAndSend(ctx, rival, body); err != nil {
			return err
		}
	}
	return outbox.CreateInstanceAndSend(ctx, a, body)
}

// TestTwoDeliveriesOfANewJobMakeOneInstance: the loser of two deliveries
// of one new job reads the job the winner stored and finds it covered; it
// must not retry from its own unstored copy, whose every create finds the
// winner's record.
func TestTwoDeliveriesOfANewJobMakeOneInstance(t *testing.T) {
	fired := new(atomic.Bool)
	w := enginetest.NewWorld(t, enginetest.Options{
		WrapStore: func(s store.Store) store.Store {
			return &duplicateBeforeFirstAdmission{Store: s, fired: fired}
		},
	})
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
