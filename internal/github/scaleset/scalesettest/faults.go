package scalesettest

import (
	"net/http"
	"strconv"
	"time"
)

// fault is one armed misbehaviour of an endpoint, used up call by call.
type fault struct {
	status     int
	typeName   string
	message    string
	retryAfter time.Duration
	delay      time.Duration
}

// FailNext makes op's next times calls answer status (a 5xx, or any
// other) with an exception body, before doing anything.
func (s *Server) FailNext(op Op, status, times int) {
	s.arm(op, times, fault{status: status, typeName: "FakeInjectedException", message: "injected by the test"})
}

// RateLimitNext makes op's next call answer 429 with Retry-After.
func (s *Server) RateLimitNext(op Op, retryAfter time.Duration) {
	s.arm(op, 1, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter, message: "rate limited"})
}

// SlowNext delays op's next times calls by delay, then serves them (a
// client deadline shorter than delay sees no answer).
func (s *Server) SlowNext(op Op, delay time.Duration, times int) {
	s.arm(op, times, fault{delay: delay})
}

func (s *Server) arm(op Op, times int, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range times {
		s.faults[op] = append(s.faults[op], f)
	}
}

// applyFault answers with the next armed fault of op; false when none
// answered (a delay alone lets the call proceed).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, op Op) bool {
	s.mu.Lock()
	fs := s.faults[op]
	if len(fs) == 0 {
		s.mu.Unlock()
		return false
	}
	f := fs[0]
	s.faults[op] = fs[1:]
	s.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return true
		}
	}
	if f.status == 0 {
		return false
	}
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter/time.Second)))
	}
	writeException(w, f.status, f.typeName, f.message)
	return true
}

// LeaveStaleSession makes a session for owner on the scale set, as a
// listener that died without deleting it leaves one: creating another
// answers 409 until SessionTTL passes with nobody using it. It returns
// the session's id.
func (s *Server) LeaveStaleSession(setID int64, owner string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openSessionLocked(setID, owner).id
}

// ExpireQueueTokens makes every queue token issued so far refused (401);
// a session refresh issues a good one.
func (s *Server) ExpireQueueTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		ss.tokenIssued = time.Time{}
	}
	s.notifyLocked() // a waiting poll answers 401 now
}

// RevokeRegistrationTokens makes every registration token minted so far
// refused at registration (401), as a revoked one would be.
func (s *Server) RevokeRegistrationTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.regTokens)
}

// ExpireAdminTokens makes every admin token issued so far refused (401);
// registering again issues a good one.
func (s *Server) ExpireAdminTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.adminTokens)
}

// DropSession forgets the scale set's session, as the broker does when it
// evicts one: its queue token is refused (401) and refreshing it answers
// 404 RunnerAdminException (scaleset PR #123).
func (s *Server) DropSession(setID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessionOfLocked(setID); ss != nil {
		delete(s.sessions, ss.id)
	}
	s.notifyLocked()
}

// DeleteScaleSetServerSide deletes a scale set as GitHub does an idle one:
// its session and queue go with it, and every call naming it answers 404
// RunnerScaleSetNotFoundException.
func (s *Server) DeleteScaleSetServerSide(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteScaleSetLocked(id)
}

func (s *Server) deleteScaleSetLocked(id int64) {
	delete(s.sets, id)
	if ss := s.sessionOfLocked(id); ss != nil {
		delete(s.sessions, ss.id)
	}
	s.notifyLocked()
}

// DeliverTwice makes the next message delivered come again on the
// following poll, whatever lastMessageId says and even if acknowledged
// in between: a listener must be idempotent per message and job.
func (s *Server) DeliverTwice() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.duplicate = true
}

// SetRunnerBusy marks a runner as running a job (or not), so that
// removing it answers JobStillRunningException.
func (s *Server) SetRunnerBusy(id int64, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runners[id]; r != nil {
		r.busy = busy
	}
}

// EmptyQueueURLNext makes the next times session answers (create or
// refresh) carry an empty messageQueueUrl, as GitHub once did during an
// incident (ARC #4370).
func (s *Server) EmptyQueueURLNext(times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emptyQueueURLs += times
}

// Armed is how many faults armed for op are still to come: a driver that
// arms faults at random moments arms one only when the last was used, so
// faults do not pile up while nobody calls (a listener waiting for its
// lease) and then answer every call in a row.
func (s *Server) Armed(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults[op])
}
