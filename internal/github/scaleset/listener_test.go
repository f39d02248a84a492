package scaleset_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// miniListener is the least a listener does with this client, written
// here only to prove the client gives it what it needs: it is not the
// listener (no engine, no lease, no store).
type miniListener struct {
	t      *testing.T
	w      *world
	set    *scaleset.ScaleSet
	m      *scaleset.MessageSession
	stored string // the session id a real listener persists
	last   int64  // lastMessageId, persisted too
	jobs   map[int64]string
	log    []string
}

// open resumes the stored session, else creates one, waiting out a
// conflict (the fake's clock stands in for the backoff sleep).
func (l *miniListener) open(ctx context.Context) {
	l.t.Helper()
	if l.stored != "" {
		m, err := l.w.client.ResumeSession(ctx, l.set.ID, l.stored)
		if err == nil {
			l.m = m
			l.log = append(l.log, "resumed")
			return
		}
		if !errors.Is(err, scaleset.ErrSessionNotFound) {
			l.t.Fatalf("resume: %v", err)
		}
	}
	for attempt := 0; attempt < 10; attempt++ {
		m, err := l.w.client.CreateSession(ctx, l.set.ID, "listener-1")
		switch {
		case err == nil:
			l.m, l.stored = m, m.ID()
			l.log = append(l.log, "created")
			return
		case errors.Is(err, scaleset.ErrSessionConflict):
			l.log = append(l.log, "conflict")
			l.w.fake.Advance(time.Minute)
		case errors.Is(err, scaleset.ErrScaleSetNotFound):
			l.set = l.w.scaleSet(l.t, l.set.Name)
		default:
			l.t.Fatalf("create session: %v", err)
		}
	}
	l.t.Fatal("no session after 10 attempts")
}

// step polls once and handles what comes: events into the ledger, then
// the acknowledgement, then lastMessageId.
func (l *miniListener) step(ctx context.Context) {
	l.t.Helper()
	msg, err := l.m.GetMessage(ctx, l.last, 10)
	switch {
	case errors.Is(err, scaleset.ErrSessionNotFound), errors.Is(err, scaleset.ErrQueueTokenExpired):
		l.log = append(l.log, "session lost")
		l.stored = ""
		l.open(ctx)
		return
	case scaleset.IsRetryable(err):
		l.log = append(l.log, "retry")
		return
	case err != nil:
		l.t.Fatalf("poll: %v", err)
	case msg == nil:
		return
	}
	for _, ev := range msg.Events {
		id := ev.Job().RunnerRequestID
		switch e := ev.(type) {
		case *scaleset.JobAssigned:
			if l.jobs[id] != "completed" {
				l.jobs[id] = "open"
			}
		case *scaleset.JobStarted:
			l.jobs[id] = "running"
		case *scaleset.JobCompleted:
			if e.Result == scaleset.ResultCanceled && e.RunnerName == "" {
				l.jobs[id] = "reassigning" // GitHub assigns it again
			} else {
				l.jobs[id] = "completed"
			}
		}
	}
	if err := l.m.DeleteMessage(ctx, msg.ID); err != nil && !scaleset.IsRetryable(err) {
		l.t.Fatalf("ack: %v", err)
	}
	l.last = max(l.last, msg.ID)
}

// The client carries a listener through every session fault in turn:
// a stale session of its own, a conflict with a dead host's session,
// queue token expiry, a dropped session, a 5xx, a duplicate delivery and
// GitHub's re-assignment — and the jobs all end completed, nothing
// unacknowledged, the session deleted.
func TestListenerShapedLoopThroughFaults(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: 50 * time.Millisecond, SessionTTL: 3 * time.Minute})
	set := w.scaleSet(t, "linux")
	// A predecessor crashed: its session is stored, and still live.
	crashed, err := w.client.CreateSession(w.ctx, set.ID, "listener-1")
	if err != nil {
		t.Fatal(err)
	}
	l := &miniListener{t: t, w: w, set: set, stored: crashed.ID(), jobs: map[int64]string{}}
	l.open(w.ctx)

	faults := []struct {
		name string
		arm  func()
	}{
		{"none", func() {}},
		{"queue token expired", w.fake.ExpireQueueTokens},
		{"session dropped", func() { w.fake.DropSession(l.set.ID) }},
		{"broker 500", func() { w.fake.FailNext(scalesettest.OpGetMessage, 500, 1) }},
		{"delivered twice", w.fake.DeliverTwice},
		{"admin token expired", w.fake.ExpireAdminTokens},
	}
	for i, f := range faults {
		f.arm()
		req := w.fake.QueueJob(l.set.ID, scalesettest.JobSpec{Repository: "octo-org/app"})
		if i == 2 {
			w.fake.CancelAssignment(req)
		}
		runner := fmt.Sprintf("runner-%d", i)
		if _, err := w.client.GenerateJITConfig(w.ctx, l.set.ID, runner, ""); err != nil {
			t.Fatal(err)
		}
		if err := w.fake.StartJob(req, runner); err != nil {
			t.Fatal(err)
		}
		if err := w.fake.CompleteJob(req, scaleset.ResultSucceeded); err != nil {
			t.Fatal(err)
		}
		for range 6 {
			l.step(w.ctx)
		}
		if l.jobs[req] != "completed" {
			t.Errorf("after %q: job %d is %q, want completed (log %v)", f.name, req, l.jobs[req], l.log)
		}
	}

	t.Logf("listener log: %v", l.log)
	for _, want := range []string{"resumed", "session lost", "created", "retry"} {
		if !slices.Contains(l.log, want) {
			t.Errorf("log %v: the loop never went through %q", l.log, want)
		}
	}

	// Shutdown: the session is deleted, freeing the scale set at once.
	if err := l.m.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	if owner := w.fake.SessionOwner(l.set.ID); owner != "" {
		t.Errorf("session still held by %q", owner)
	}
	if n := w.fake.Unacknowledged(l.set.ID); n != 0 {
		t.Errorf("%d messages unacknowledged", n)
	}
	if got := w.fake.AssignedJobs(l.set.ID); got != 0 {
		t.Errorf("TotalAssignedJobs %d after every job completed", got)
	}
	if l.log[0] != "resumed" {
		t.Errorf("log %v: want the stored session resumed first", l.log)
	}

	// A second listener on another host meets a dead host's session and
	// waits it out rather than exiting.
	w.fake.LeaveStaleSession(l.set.ID, "dead-host")
	l2 := &miniListener{t: t, w: w, set: l.set, jobs: map[int64]string{}}
	l2.open(w.ctx)
	if got := l2.log; len(got) < 2 || got[0] != "conflict" || got[len(got)-1] != "created" {
		t.Errorf("second listener log %v: want conflicts then created", got)
	}
	_ = l2.m.Close(w.ctx)
}
