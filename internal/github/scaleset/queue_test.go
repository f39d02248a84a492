package scaleset_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// An empty poll window is 202: no message, no error.
func TestPollTimesOutWith202(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	m := w.session(t, w.scaleSet(t, "linux"))
	msg, err := m.GetMessage(w.ctx, 0, 5)
	if msg != nil || err != nil {
		t.Fatalf("GetMessage = %v, %v; want nil, nil", msg, err)
	}
	if got := w.fake.CountStatus(scalesettest.OpGetMessage, 202); got != 1 {
		t.Errorf("%d polls answered 202, want 1", got)
	}
}

// The poll sends X-ScaleSetMaxCapacity and lastMessageId; a message
// carries its job messages in order and the statistics.
func TestPollSendsCapacityAndLastMessageID(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	req := w.fake.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{"linux"}, WorkflowRunID: 77})

	msg, err := m.GetMessage(w.ctx, 0, 7)
	if err != nil || msg == nil {
		t.Fatalf("GetMessage: %v %v", msg, err)
	}
	if msg.Type != scaleset.JobMessagesType || msg.Malformed != nil {
		t.Fatalf("message %+v", msg)
	}
	a, ok := msg.Events[0].(*scaleset.JobAssigned)
	if !ok || a.RunnerRequestID != req || a.WorkflowRunID != 77 || a.OwnerName != "octo-org" || a.RepositoryName != "app" ||
		!slices.Equal(a.RequestLabels, []string{"linux"}) || a.QueueTime.IsZero() || !a.RunnerAssignTime.IsZero() {
		t.Errorf("event %#v", msg.Events[0])
	}
	if msg.Statistics.TotalAssignedJobs != 1 {
		t.Errorf("statistics %+v", msg.Statistics)
	}
	if err := m.DeleteMessage(w.ctx, msg.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetMessage(w.ctx, msg.ID, 3); err != nil {
		t.Fatal(err)
	}
	calls := callsOf(w.fake, scalesettest.OpGetMessage)
	if calls[0].MaxCapacity != "7" || calls[0].Query.Has("lastMessageId") {
		t.Errorf("first poll: capacity %q, query %v", calls[0].MaxCapacity, calls[0].Query)
	}
	if calls[1].MaxCapacity != "3" || calls[1].Query.Get("lastMessageId") != itoa(msg.ID) {
		t.Errorf("second poll: capacity %q, query %v", calls[1].MaxCapacity, calls[1].Query)
	}
}

// Queue token expiry on each queue call: the client refreshes the session
// once and retries, and the caller sees nothing.
func TestQueueTokenExpiryRefreshesOnce(t *testing.T) {
	for name, call := range map[string]func(w *world, m *scaleset.MessageSession, set *scaleset.ScaleSet) error{
		"get message": func(w *world, m *scaleset.MessageSession, _ *scaleset.ScaleSet) error {
			_, err := m.GetMessage(w.ctx, 0, 1)
			return err
		},
		"delete message": func(w *world, m *scaleset.MessageSession, set *scaleset.ScaleSet) error {
			return m.DeleteMessage(w.ctx, 1)
		},
		"acquire jobs": func(w *world, m *scaleset.MessageSession, _ *scaleset.ScaleSet) error {
			_, err := m.AcquireJobs(w.ctx, []int64{42})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
			set := w.scaleSet(t, "linux")
			w.fake.QueueJob(set.ID, scalesettest.JobSpec{}) // message 1 exists to delete
			m := w.session(t, set)
			w.fake.ExpireQueueTokens()
			if err := call(w, m, set); err != nil {
				t.Fatalf("%s after expiry: %v", name, err)
			}
			if got := w.fake.Count(scalesettest.OpRefreshSession); got != 1 {
				t.Errorf("%d refreshes, want 1", got)
			}
		})
	}
}

// Tokens that age past their lifetime are refreshed the same way.
func TestQueueTokenAgesOut(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll, QueueTokenTTL: 50 * time.Minute})
	m := w.session(t, w.scaleSet(t, "linux"))
	w.fake.Advance(51 * time.Minute)
	if _, err := m.GetMessage(w.ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	if w.fake.CountStatus(scalesettest.OpGetMessage, 401) != 1 || w.fake.Count(scalesettest.OpRefreshSession) != 1 {
		t.Errorf("calls: %+v", w.fake.Calls())
	}
}

// The broker dropped the session: the poll's 401 leads to a refresh that
// answers 404, and the caller gets ErrSessionNotFound (not a crash loop:
// the listener re-creates the session and keeps lastMessageId).
func TestPollAfterSessionDroppedIsSessionNotFound(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	w.fake.DropSession(set.ID)
	_, err := m.GetMessage(w.ctx, 0, 1)
	wantKind(t, err, scaleset.ErrSessionNotFound)
	if _, err := w.client.CreateSession(w.ctx, set.ID, "host"); err != nil {
		t.Fatalf("a new session after the drop: %v", err)
	}
}

// The scale set deleted server-side under the listener: the poll ends in
// ErrScaleSetNotFound, and EnsureScaleSet brings it back.
func TestScaleSetDeletedUnderListener(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: time.Second})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	go func() {
		time.Sleep(50 * time.Millisecond) // while the poll waits
		w.fake.DeleteScaleSetServerSide(set.ID)
	}()
	_, err := m.GetMessage(w.ctx, 0, 1)
	wantKind(t, err, scaleset.ErrScaleSetNotFound)

	again := w.scaleSet(t, "linux")
	if again.ID == set.ID || !w.fake.HasScaleSet(again.ID) {
		t.Errorf("re-created scale set %d (old %d)", again.ID, set.ID)
	}
	w.session(t, again)
}

// A message not acknowledged comes again on the next poll from the same
// lastMessageId; once acknowledged it does not.
func TestUnacknowledgedMessageIsRedelivered(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	w.fake.QueueJob(set.ID, scalesettest.JobSpec{})
	first := poll(t, m, 0)
	second := poll(t, m, 0) // the listener crashed before acknowledging
	if second.ID != first.ID || w.fake.Deliveries(set.ID, first.ID) != 2 {
		t.Fatalf("redelivery: %d then %d", first.ID, second.ID)
	}
	if err := m.DeleteMessage(w.ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if msg, err := m.GetMessage(w.ctx, 0, 1); msg != nil || err != nil {
		t.Errorf("after ack: %v %v, want nothing", msg, err)
	}
	if w.fake.Unacknowledged(set.ID) != 0 {
		t.Error("messages left unacknowledged")
	}
}

// The service may deliver a message twice even after it was acknowledged.
func TestMessageDeliveredTwice(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	w.fake.DeliverTwice()
	w.fake.QueueJob(set.ID, scalesettest.JobSpec{})
	first := poll(t, m, 0)
	if err := m.DeleteMessage(w.ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	dup := poll(t, m, first.ID)
	if dup.ID != first.ID {
		t.Errorf("second delivery %d, want %d again", dup.ID, first.ID)
	}
	if err := m.DeleteMessage(w.ctx, dup.ID); err != nil {
		t.Errorf("acknowledging the duplicate: %v", err)
	}
}

// GitHub takes back an assignment no runner took, up to three times:
// JobAssigned, then JobCompleted(canceled) + JobAssigned, three times over.
func TestReassignmentUpToThreeTimes(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	req := w.fake.QueueJob(set.ID, scalesettest.JobSpec{})
	var last int64
	var seen []string
	for i := 0; ; i++ {
		msg := poll(t, m, last)
		for _, ev := range msg.Events {
			if ev.Job().RunnerRequestID != req {
				t.Errorf("event for request %d, want %d", ev.Job().RunnerRequestID, req)
			}
		}
		seen = append(seen, kinds(msg)...)
		if err := m.DeleteMessage(w.ctx, msg.ID); err != nil {
			t.Fatal(err)
		}
		last = msg.ID
		if !w.fake.CancelAssignment(req) {
			if i != scalesettest.MaxReassignments {
				t.Fatalf("re-assignment refused after %d, want %d", i, scalesettest.MaxReassignments)
			}
			break
		}
	}
	want := []string{"assigned"}
	for range scalesettest.MaxReassignments {
		want = append(want, "completed:canceled", "assigned")
	}
	if !slices.Equal(seen, want) {
		t.Errorf("events %v, want %v", seen, want)
	}
	if got := w.fake.AssignedJobs(set.ID); got != 1 {
		t.Errorf("TotalAssignedJobs %d, want 1: the job still wants a runner", got)
	}
}

// GHES: jobs arrive as JobAvailable and are acquired with the queue token.
func TestAcquireJobs(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll, AcquireRequired: true})
	set := w.scaleSet(t, "linux")
	m := w.session(t, set)
	req := w.fake.QueueJob(set.ID, scalesettest.JobSpec{})
	msg := poll(t, m, 0)
	av, ok := msg.Events[0].(*scaleset.JobAvailable)
	if !ok || av.AcquireJobURL == "" || msg.Statistics.TotalAvailableJobs != 1 {
		t.Fatalf("first message %v %+v", kinds(msg), msg.Statistics)
	}
	got, err := m.AcquireJobs(w.ctx, []int64{req, 999})
	if err != nil || !slices.Equal(got, []int64{req}) {
		t.Fatalf("AcquireJobs = %v, %v; want [%d]", got, err, req)
	}
	if err := m.DeleteMessage(w.ctx, msg.ID); err != nil {
		t.Fatal(err)
	}
	next := poll(t, m, msg.ID)
	if !slices.Equal(kinds(next), []string{"assigned"}) || next.Statistics.TotalAssignedJobs != 1 {
		t.Errorf("after acquire: %v %+v", kinds(next), next.Statistics)
	}
	for _, c := range callsOf(w.fake, scalesettest.OpAcquireJobs) {
		if c.Query.Get("api-version") == "" {
			t.Error("acquire without api-version")
		}
	}
	if got, err := m.AcquireJobs(w.ctx, nil); got != nil || err != nil {
		t.Errorf("AcquireJobs(nil) = %v, %v", got, err)
	}
}

func callsOf(fake *scalesettest.Server, op scalesettest.Op) []scalesettest.Call {
	var out []scalesettest.Call
	for _, c := range fake.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A queue token that is a JWT is renewed before it expires: no 401.
func TestQueueTokenRenewedBeforeExpiry(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll, QueueTokenTTL: 50 * time.Minute, QueueTokenJWT: true})
	m := w.session(t, w.scaleSet(t, "linux"))
	if exp := m.QueueTokenExpiry(); exp.IsZero() {
		t.Fatal("the JWT queue token's expiry is unread")
	}
	w.fake.Advance(49 * time.Minute) // within the renewal margin
	if _, err := m.GetMessage(w.ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	if w.fake.CountStatus(scalesettest.OpGetMessage, 401) != 0 || w.fake.Count(scalesettest.OpRefreshSession) != 1 {
		t.Errorf("want one refresh and no 401: %+v", w.fake.Calls())
	}
}

// A queue token refused again after the refresh is ErrQueueTokenExpired:
// the client tries once, not in a loop.
func TestQueueTokenRefusedAfterRefresh(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: shortPoll})
	m := w.session(t, w.scaleSet(t, "linux"))
	w.fake.FailNext(scalesettest.OpGetMessage, 401, 2)
	_, err := m.GetMessage(w.ctx, 0, 1)
	wantKind(t, err, scaleset.ErrQueueTokenExpired)
	if got := w.fake.Count(scalesettest.OpRefreshSession); got != 1 {
		t.Errorf("%d refreshes, want 1", got)
	}
}
