package listener_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/runner"
)

// crashedPredecessor plays a listener killed with kill -9 while it held
// the lease and a session: its lease runs until it expires, its session
// stays open at GitHub, and — when stored is true — its id is in the
// store as the dead listener saved it.
func (r *rig) crashedPredecessor(stored bool) string {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.w.Store.AcquireLease(ctx, listener.LeaseName(pool().Name), "dead-replica", time.Second, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	session := r.fake.LeaveStaleSession(r.setID, "dead-replica")
	if stored {
		saveState(r, session)
	}
	return session
}

// A listener started after a crash resumes the stored session — no 409,
// no wait for GitHub to expire it — and loses none of the jobs queued
// while nobody listened.
func TestCrashResumesTheStoredSession(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	stale := r.crashedPredecessor(true)
	id := r.queue()
	r.start("replica-2")
	r.runJob(id)
	if n := r.fake.Count(scalesettest.OpCreateSession); n != 0 {
		t.Errorf("%d sessions created, want the stored one resumed", n)
	}
	if _, session, _ := r.state(); session != stale {
		t.Errorf("stored session %q, want the resumed %q", session, stale)
	}
	if !strings.Contains(r.w.Logs.String(), "message session resumed") {
		t.Error("no log line says the session was resumed")
	}
}

// A crash that left a session the store does not name (the listener died
// between creating it and saving it): the successor is refused with 409,
// waits with backoff — never exits — until GitHub expires the stale
// session, and then serves the jobs queued meanwhile.
func TestCrashWaitsOutTheSessionConflict(t *testing.T) {
	r := newRig(t, scalesettest.Options{SessionTTL: 2 * time.Second})
	r.crashedPredecessor(false)
	id := r.queue()
	r.start("replica-2")
	r.runJob(id)
	if n := r.fake.CountStatus(scalesettest.OpCreateSession, 409); n == 0 {
		t.Error("no 409 was met: the test did not exercise the conflict")
	}
	if n := r.creates(instanceFor(id)); n != 1 {
		t.Fatalf("%d creates for the job's runner, want 1", n)
	}
}

// GitHub drops the session (poll 401, refresh 404): a new session keeps
// lastMessageId and no job is lost. Then GitHub deletes the scale set: it
// is ensured again (a new id, a new queue) and its jobs are served too.
func TestDroppedSessionAndDeletedScaleSetAreSurvived(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	first := r.queue()
	r.runJob(first)
	_, before, last := r.state()

	r.fake.DropSession(r.setID)
	second := r.queue()
	r.runJob(second)
	if _, after, kept := r.state(); after == before || kept < last {
		t.Fatalf("after the drop: session %q (was %q), last message %d (was %d)", after, before, kept, last)
	}

	old := r.setID
	r.fake.DeleteScaleSetServerSide(old)
	r.w.WaitFor("the scale set ensured again", func() bool {
		id, _, _ := r.state()
		return id != 0 && id != old
	})
	r.setID, _, _ = r.state()
	third := r.queue()
	r.runJob(third)
	for _, id := range []int64{first, second, third} {
		if n := r.creates(instanceFor(id)); n != 1 {
			t.Errorf("job %d: %d creates, want 1", id, n)
		}
	}
	if j := r.job(third); j.Status != runner.JobClosed {
		t.Errorf("job of the new scale set is %s", j.Status)
	}
}

// Two replicas run a listener for the pool: one holds the lease and the
// session, the other waits. When the holder stops, the other takes over —
// the session resumed or re-created — and no job is lost.
func TestTwoReplicasNeverPollAtOnce(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	r.w.WaitFor("a session", func() bool { _, s, _ := r.state(); return s != "" })
	r.start("replica-2")
	first := r.queue()
	r.runJob(first)
	if n := r.fake.Count(scalesettest.OpCreateSession); n != 1 {
		t.Fatalf("%d sessions created with two replicas running, want 1", n)
	}
	r.stop("replica-1")
	second := r.queue()
	r.runJob(second)
	if n := r.fake.CountStatus(scalesettest.OpCreateSession, 409); n != 0 {
		t.Errorf("%d session conflicts: the stopping listener did not delete its session", n)
	}
	for _, id := range []int64{first, second} {
		if n := r.creates(instanceFor(id)); n != 1 {
			t.Errorf("job %d: %d creates, want 1", id, n)
		}
	}
}

// A listener that stops on a schedule (KeepSession, as each Lambda
// invocation does) leaves its session open and stored; the next one
// resumes it — no new session, no 409 — and serves the job queued while
// nobody listened.
func TestAScheduledStopLeavesTheSessionForTheNextToResume(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.keepSession = true
	r.start("tick-1")
	first := r.queue()
	r.runJob(first)
	r.stop("tick-1")
	_, kept, _ := r.state()
	if kept == "" || r.fake.Count(scalesettest.OpDeleteSession) != 0 {
		t.Fatalf("after a scheduled stop: stored session %q, %d deletes; want it kept and stored", kept, r.fake.Count(scalesettest.OpDeleteSession))
	}
	second := r.queue()
	r.start("tick-2")
	r.runJob(second)
	if n := r.fake.Count(scalesettest.OpCreateSession); n != 1 {
		t.Errorf("%d sessions created, want 1 (the second listener resumes it)", n)
	}
	if n := r.fake.CountStatus(scalesettest.OpCreateSession, 409); n != 0 {
		t.Errorf("%d session conflicts, want none", n)
	}
	if _, session, _ := r.state(); session != kept {
		t.Errorf("stored session %q, want the resumed %q", session, kept)
	}
}
