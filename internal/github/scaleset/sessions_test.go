package scaleset_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// A session left by a dead listener holds the scale set (409) until GitHub
// expires it; then a new session is created.
func TestStaleSessionConflictsUntilItExpires(t *testing.T) {
	w := newWorld(t, scalesettest.Options{SessionTTL: 3 * time.Minute})
	set := w.scaleSet(t, "linux")
	w.fake.LeaveStaleSession(set.ID, "dead-host")

	for _, after := range []time.Duration{0, time.Minute, time.Minute} {
		w.fake.Advance(after)
		_, err := w.client.CreateSession(w.ctx, set.ID, "new-host")
		e := wantKind(t, err, scaleset.ErrSessionConflict)
		if e.StatusCode != 409 || !strings.Contains(e.Message, "dead-host") {
			t.Errorf("conflict %+v: want 409 naming the holder", e)
		}
		if scaleset.IsRetryable(err) {
			t.Errorf("a conflict is retryable: want the caller to decide (resume or wait)")
		}
	}
	w.fake.Advance(time.Minute + time.Second)
	m := w.session(t, set)
	if got := w.fake.SessionOwner(set.ID); got != "test-host" {
		t.Errorf("session owner %q, want test-host", got)
	}
	if m.ID() == "" {
		t.Error("no session id")
	}
}

// A listener restarted after a crash resumes the session it stored
// instead of meeting its own 409.
func TestResumeStoredSession(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	first, err := w.client.CreateSession(w.ctx, set.ID, "host")
	if err != nil {
		t.Fatal(err)
	}
	stored := first.ID() // the crash: nothing deleted

	_, err = w.client.CreateSession(w.ctx, set.ID, "host")
	wantKind(t, err, scaleset.ErrSessionConflict)

	resumed, err := w.client.ResumeSession(w.ctx, set.ID, stored)
	if err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	if resumed.ID() != stored {
		t.Errorf("resumed %q, want %q", resumed.ID(), stored)
	}
	if _, err := resumed.GetMessage(w.ctx, 0, 1); err != nil {
		t.Fatalf("poll on the resumed session: %v", err)
	}
	if err := resumed.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	if w.fake.SessionOwner(set.ID) != "" {
		t.Error("the session is still there after Close")
	}
}

// A session GitHub dropped: refreshing answers 404, resuming it says
// ErrSessionNotFound, and deleting it counts as done.
func TestDroppedSession(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	w.fake.DropSession(set.ID)

	e := wantKind(t, m.Refresh(w.ctx), scaleset.ErrSessionNotFound)
	if e.StatusCode != 404 || !strings.Contains(e.TypeName, "RunnerAdminException") {
		t.Errorf("refresh error %+v: want 404 RunnerAdminException", e)
	}
	_, err := w.client.ResumeSession(w.ctx, set.ID, m.ID())
	wantKind(t, err, scaleset.ErrSessionNotFound)
	if err := m.Close(w.ctx); err != nil {
		t.Errorf("Close of a dropped session: %v, want nil", err)
	}
}

// Deleting a session that expired meanwhile (400 SessionExpired) is done.
func TestCloseExpiredSession(t *testing.T) {
	w := newWorld(t, scalesettest.Options{SessionTTL: time.Minute})
	m := w.session(t, w.scaleSet(t, "linux"))
	w.fake.Advance(2 * time.Minute)
	if err := m.Close(w.ctx); err != nil {
		t.Errorf("Close: %v, want nil", err)
	}
	if got := w.fake.CountStatus(scalesettest.OpDeleteSession, 400); got != 1 {
		t.Errorf("%d deletes answered 400, want 1", got)
	}
}

// A session on a scale set that does not exist is ErrScaleSetNotFound.
func TestCreateSessionOnMissingScaleSet(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	_, err := w.client.CreateSession(w.ctx, 987654, "host")
	wantKind(t, err, scaleset.ErrScaleSetNotFound)
}

// Create and refresh carry the scale set's statistics.
func TestSessionStatistics(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	w.fake.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app"})
	w.fake.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app"})
	m := w.session(t, set)
	if got := m.Statistics().TotalAssignedJobs; got != 2 {
		t.Errorf("TotalAssignedJobs %d, want 2", got)
	}
}

// A session created without a queue URL (ARC #4370) is refreshed once;
// if it still has none it is deleted, so the scale set is not locked.
func TestSessionWithoutQueueURL(t *testing.T) {
	t.Run("refresh cures it", func(t *testing.T) {
		w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
		set := w.scaleSet(t, "linux")
		w.fake.EmptyQueueURLNext(1)
		m := w.session(t, set)
		if _, err := m.GetMessage(w.ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
		if got := w.fake.Count(scalesettest.OpRefreshSession); got != 1 {
			t.Errorf("%d refreshes, want 1", got)
		}
	})
	t.Run("deleted when it does not", func(t *testing.T) {
		w := newWorld(t, scalesettest.Options{})
		set := w.scaleSet(t, "linux")
		w.fake.EmptyQueueURLNext(2)
		_, err := w.client.CreateSession(w.ctx, set.ID, "host")
		wantKind(t, err, scaleset.ErrBadResponse)
		if owner := w.fake.SessionOwner(set.ID); owner != "" {
			t.Errorf("the unusable session still holds the scale set (%s)", owner)
		}
		w.session(t, set) // the next attempt is not a 409
	})
}
