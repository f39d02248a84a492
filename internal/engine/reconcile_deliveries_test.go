package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// deliveryLog is a delivery log in memory, newest first, two per page.
type deliveryLog struct {
	mu       sync.Mutex
	log      []github.Delivery // oldest first
	events   map[int64]runner.JobEvent
	listErr  error
	getErr   error
	lists    int
	gets     int
	pageSize int
}

func (l *deliveryLog) add(at time.Time, guid string, code int, ev runner.JobEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := int64(len(l.log) + 1)
	l.log = append(l.log, github.Delivery{ID: id, GUID: guid, DeliveredAt: at, StatusCode: code, Event: github.EventWorkflowJob, Action: string(ev.Action)})
	l.events[id] = ev
}

func (l *deliveryLog) ListDeliveries(_ context.Context, cursor string) ([]github.Delivery, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	if l.listErr != nil {
		return nil, "", l.listErr
	}
	start := len(l.log) - 1
	if cursor != "" {
		_, _ = fmt.Sscan(cursor, &start)
	}
	var page []github.Delivery
	for i := start; i >= 0 && len(page) < l.pageSize; i-- {
		page = append(page, l.log[i])
	}
	next := ""
	if end := start - len(page); end >= 0 {
		next = fmt.Sprint(end)
	}
	return page, next, nil
}

func (l *deliveryLog) GetDelivery(_ context.Context, id int64) (*github.Delivery, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gets++
	if l.getErr != nil {
		return nil, l.getErr
	}
	d := l.log[id-1]
	d.Payload = fmt.Appendf(nil, "%d", id)
	return &d, nil
}

func (l *deliveryLog) parse(_ string, payload []byte) (runner.JobEvent, error) {
	var id int64
	if _, err := fmt.Sscan(string(payload), &id); err != nil {
		return runner.JobEvent{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events[id], nil
}

func deliveryWorld(t *testing.T, log *deliveryLog) *enginetest.World {
	return enginetest.NewWorld(t, enginetest.Options{Engine: func(o *engine.Options) {
		o.Deliveries = &engine.DeliveryRecovery{Logs: []engine.DeliverySource{engine.AppDeliveries(log)}, Parse: log.parse, Settle: time.Minute}
	}})
}

// A delivery retried by hand that then succeeded is not lost; one whose
// every attempt failed is recovered once, even while it stays inside the
// settle window and is read again; a delivery older than the first pass's
// lookback is not read at all.
func TestRecoveryGroupsAttemptsByGUID(t *testing.T) {
	log := &deliveryLog{events: map[int64]runner.JobEvent{}, pageSize: 2}
	now := time.Now()
	log.add(now.Add(-2*time.Hour), "ancient", 502, enginetest.Event(runner.ActionQueued, 1, ""))
	log.add(now.Add(-10*time.Minute), "retried", 502, enginetest.Event(runner.ActionQueued, 2, ""))
	log.add(now.Add(-9*time.Minute), "retried", 200, enginetest.Event(runner.ActionQueued, 2, ""))
	log.add(now.Add(-8*time.Minute), "lost", 0, enginetest.Event(runner.ActionQueued, 3, ""))
	log.add(now.Add(-10*time.Second), "lost-recently", 502, enginetest.Event(runner.ActionQueued, 4, ""))
	w := deliveryWorld(t, log)
	for pass := 1; pass <= 2; pass++ {
		rep, err := w.Engine.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{1: 2, 2: 0}[pass]; rep.DeliveriesRecovered != want {
			t.Errorf("pass %d recovered %d, want %d", pass, rep.DeliveriesRecovered, want)
		}
	}
	if log.gets != 2 {
		t.Errorf("%d deliveries fetched, want 2 (lost, lost-recently), each once", log.gets)
	}
	if log.lists != 3+1 {
		t.Errorf("%d list calls, want 3 on the first pass (lookback) and 1 on the second (position)", log.lists)
	}
	for _, id := range []int64{3, 4} {
		if _, err := w.Store.GetJob(context.Background(), runner.JobKey(id, 1)); err != nil {
			t.Errorf("job %d not in the ledger: %v", id, err)
		}
	}
	// The recovered delivery arriving later by webhook (redelivered by
	// hand) changes nothing.
	out, err := w.Engine.HandleJobEvent(context.Background(), enginetest.Event(runner.ActionQueued, 3, ""), engine.Webhook("lost"))
	if err != nil || out.Result == engine.ResultCreated {
		t.Errorf("the recovered delivery again by webhook: %+v, %v; want no second instance", out, err)
	}
	if made := w.Job(3).Made; made != 1 {
		t.Errorf("job 3: %d instances made, want 1", made)
	}
	for _, id := range []int64{1, 2} {
		if _, err := w.Store.GetJob(context.Background(), runner.JobKey(id, 1)); err == nil {
			t.Errorf("job %d was recovered; it should not have been", id)
		}
	}
}

// A delivery log that cannot be read fails the step, not the pass.
func TestUnreadableDeliveryLogDoesNotStopThePass(t *testing.T) {
	log := &deliveryLog{events: map[int64]runner.JobEvent{}, pageSize: 2, listErr: errors.New("github: 502")}
	w := deliveryWorld(t, log)
	w.Deliver(enginetest.Event(runner.ActionQueued, 7, ""))
	rep, err := w.Engine.Reconcile(context.Background())
	if err == nil || rep.Examined != 1 || rep.OpenJobs != 1 {
		t.Fatalf("pass with an unreadable delivery log: %+v, %v; want the rest of the pass done and the error reported", rep, err)
	}
}

// A rate limit stops the pass's fetches at the first refusal; the next
// pass resumes from there and recovers everything.
func TestRateLimitedRecoveryResumesNextPass(t *testing.T) {
	log := &deliveryLog{events: map[int64]runner.JobEvent{}, pageSize: 10}
	now := time.Now()
	for i := int64(1); i <= 3; i++ {
		log.add(now.Add(-5*time.Minute), fmt.Sprint("lost-", i), 0, enginetest.Event(runner.ActionQueued, 10+i, ""))
	}
	log.getErr = &github.RateLimitError{RetryAt: now.Add(time.Minute)}
	w := deliveryWorld(t, log)
	rep, err := w.Engine.Reconcile(context.Background())
	if _, limited := errors.AsType[*github.RateLimitError](err); !limited || rep.DeliveriesRecovered != 0 || log.gets != 1 {
		t.Fatalf("rate-limited pass: %d fetches, %d recovered, %v; want 1 fetch and the rate limit", log.gets, rep.DeliveriesRecovered, err)
	}
	log.mu.Lock()
	log.getErr = nil
	log.mu.Unlock()
	if rep, err = w.Engine.Reconcile(context.Background()); err != nil || rep.DeliveriesRecovered != 3 {
		t.Fatalf("next pass recovered %d, %v; want 3", rep.DeliveriesRecovered, err)
	}
}

// A pass stopped by a rate limit on a delivery whose attempts straddle
// another lost delivery keeps its position below the oldest attempt, not
// the newest: the one in between is read and recovered next pass
// (simulation seed 33851 at 4966bf5: a queued job's only delivery was
// passed by for good).
func TestRateLimitedRecoveryKeepsEveryAttemptOfTheHeldDelivery(t *testing.T) {
	log := &deliveryLog{events: map[int64]runner.JobEvent{}, pageSize: 10}
	now := time.Now()
	log.add(now.Add(-5*time.Minute), "lost-twice", 503, enginetest.Event(runner.ActionQueued, 21, ""))
	log.add(now.Add(-5*time.Minute), "lost-once", 503, enginetest.Event(runner.ActionQueued, 22, ""))
	log.add(now.Add(-5*time.Minute), "lost-twice", 503, enginetest.Event(runner.ActionQueued, 21, ""))
	log.getErr = &github.RateLimitError{RetryAt: now.Add(time.Minute)}
	w := deliveryWorld(t, log)
	if rep, err := w.Engine.Reconcile(context.Background()); err == nil || rep.DeliveriesRecovered != 0 {
		t.Fatalf("rate-limited pass: %d recovered, %v; want none and the rate limit", rep.DeliveriesRecovered, err)
	}
	log.mu.Lock()
	log.getErr = nil
	log.mu.Unlock()
	if rep, err := w.Engine.Reconcile(context.Background()); err != nil || rep.DeliveriesRecovered != 2 {
		t.Fatalf("next pass recovered %d, %v; want 2 (both lost deliveries)", rep.DeliveriesRecovered, err)
	}
	for _, id := range []int64{21, 22} {
		if _, err := w.Store.GetJob(context.Background(), runner.JobKey(id, 1)); err != nil {
			t.Errorf("job %d not in the ledger: %v", id, err)
		}
	}
}
