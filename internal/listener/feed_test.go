package listener

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// recordingIntake records the events it is handed, per job, and how many
// it was handed at once; failFor fails one job's events.
type recordingIntake struct {
	mu       sync.Mutex
	perJob   map[int64][]runner.JobAction
	inFlight int
	most     int
	hold     time.Duration
	failFor  int64
}

func (r *recordingIntake) HandleJobEvent(_ context.Context, ev runner.JobEvent, _ engine.EventMeta) (engine.Outcome, error) {
	r.mu.Lock()
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.mu.Unlock()
	// Held a moment, as a durable write is, so calls side by side overlap.
	time.Sleep(r.hold)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	if ev.JobID == r.failFor {
		return engine.Outcome{}, errors.New("store unavailable")
	}
	r.perJob[ev.JobID] = append(r.perJob[ev.JobID], ev.Action)
	return engine.Outcome{}, nil
}

func assigned(id int64) scaleset.Event {
	return &scaleset.JobAssigned{JobRef: scaleset.JobRef{RunnerRequestID: id}}
}

func started(id int64) scaleset.Event {
	return &scaleset.JobStarted{JobRef: scaleset.JobRef{RunnerRequestID: id}, RunnerID: id, RunnerName: "r"}
}

func completed(id int64) scaleset.Event {
	return &scaleset.JobCompleted{JobRef: scaleset.JobRef{RunnerRequestID: id}, Result: scaleset.ResultSucceeded, RunnerID: id, RunnerName: "r"}
}

func TestByJobKeepsEachJobsOrder(t *testing.T) {
	a1, b1, a2, c1, b2 := assigned(1), assigned(2), started(1), assigned(3), started(2)
	unknown := &scaleset.UnknownEvent{Type: "JobFoo"}
	cases := []struct {
		name   string
		events []scaleset.Event
		want   [][]scaleset.Event
	}{
		{"none", nil, nil},
		{"one job", []scaleset.Event{a1, a2}, [][]scaleset.Event{{a1, a2}}},
		{"interleaved jobs", []scaleset.Event{a1, b1, a2, c1, b2}, [][]scaleset.Event{{a1, a2}, {b1, b2}, {c1}}},
		{"unknown events together", []scaleset.Event{unknown, a1, unknown}, [][]scaleset.Event{{unknown, unknown}, {a1}}},
	}
	for _, tc := range cases {
		var got [][]scaleset.Event
		for _, group := range byJob(tc.events) {
			var evs []scaleset.Event
			for _, i := range group {
				evs = append(evs, tc.events[i])
			}
			got = append(got, evs)
		}
		if !slices.EqualFunc(got, tc.want, func(x, y []scaleset.Event) bool { return slices.Equal(x, y) }) {
			t.Errorf("%s: byJob = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A message's jobs go into the ledger side by side, so their writes can
// share a flush; each job's events still arrive in the message's order.
func TestFeedRunsJobsSideBySideEachInOrder(t *testing.T) {
	in := &recordingIntake{perJob: map[int64][]runner.JobAction{}, hold: 20 * time.Millisecond}
	l := &Listener{o: Options{Pool: runner.Pool{Name: "p"}, Intake: in}}
	var events []scaleset.Event
	for id := int64(1); id <= 40; id++ {
		events = append(events, assigned(id))
	}
	for id := int64(1); id <= 40; id += 2 {
		events = append(events, started(id), completed(id))
	}
	if err := l.feed(context.Background(), slog.New(slog.DiscardHandler), engine.EventMeta{}, runner.MessageSeq{}, events); err != nil {
		t.Fatal(err)
	}
	if in.most < 2 || in.most > DefaultFeedParallel {
		t.Errorf("at most %d events handled at once, want between 2 and %d", in.most, DefaultFeedParallel)
	}
	for id := int64(1); id <= 40; id++ {
		want := []runner.JobAction{runner.ActionQueued}
		if id%2 == 1 {
			want = append(want, runner.ActionInProgress, runner.ActionCompleted)
		}
		if got := in.perJob[runner.ScaleSetJobID(id)]; !slices.Equal(got, want) {
			t.Errorf("job %d: handled %v, want %v", id, got, want)
		}
	}
}

// One job's failure fails the message (it is not acknowledged and comes
// again) without keeping the other jobs out of the ledger; the failed
// job's later events wait for the message to come again.
// So it is fed one job after the other too (FeedParallel 1).
func TestFeedReportsAFailureAndFeedsTheOthers(t *testing.T) {
	for _, parallel := range []int{0, 1} {
		in := &recordingIntake{perJob: map[int64][]runner.JobAction{}, failFor: runner.ScaleSetJobID(2)}
		l := &Listener{o: Options{Pool: runner.Pool{Name: "p"}, Intake: in, FeedParallel: parallel}}
		events := []scaleset.Event{assigned(1), assigned(2), started(2), assigned(3)}
		err := l.feed(context.Background(), slog.New(slog.DiscardHandler), engine.EventMeta{}, runner.MessageSeq{}, events)
		if err == nil {
			t.Fatalf("FeedParallel %d: a failed event was not reported", parallel)
		}
		if len(in.perJob[runner.ScaleSetJobID(1)]) != 1 || len(in.perJob[runner.ScaleSetJobID(3)]) != 1 || len(in.perJob[runner.ScaleSetJobID(2)]) != 0 {
			t.Errorf("FeedParallel %d: handled %v: want jobs 1 and 3 queued, nothing of job 2", parallel, in.perJob)
		}
	}
}

// One after the other, a message's jobs are fed in its order, never two
// at once.
func TestFeedOneAtATimeKeepsTheMessagesOrder(t *testing.T) {
	in := &recordingIntake{perJob: map[int64][]runner.JobAction{}}
	l := &Listener{o: Options{Pool: runner.Pool{Name: "p"}, Intake: in, FeedParallel: 1}}
	events := []scaleset.Event{assigned(1), assigned(2), started(1), completed(1)}
	if err := l.feed(context.Background(), slog.New(slog.DiscardHandler), engine.EventMeta{}, runner.MessageSeq{}, events); err != nil {
		t.Fatal(err)
	}
	if in.most != 1 {
		t.Errorf("at most %d events handled at once, want 1", in.most)
	}
	want := []runner.JobAction{runner.ActionQueued, runner.ActionInProgress, runner.ActionCompleted}
	if got := in.perJob[runner.ScaleSetJobID(1)]; !slices.Equal(got, want) {
		t.Errorf("job 1: handled %v, want %v", got, want)
	}
}
