package sim

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/listener"
)

// actionsClient is one process's scale-set client (listener.Client): the
// calls *scaleset.Client makes, answered by the simulated service with
// the errors that client returns.
type actionsClient struct {
	s *actionsService
	p *process
}

var (
	_ listener.Client  = (*actionsClient)(nil)
	_ listener.Session = (*ssSession)(nil)
)

// EnsureScaleSet finds the scale set by name, or makes it (GitHub deleted
// it, or it never existed).
func (c *actionsClient) EnsureScaleSet(ctx context.Context, _ string, spec scaleset.ScaleSetSpec) (*scaleset.ScaleSet, error) {
	s := c.s
	after, err := s.call(ctx, c.p, "ensure_scale_set")
	var set *ssScaleSet
	effect := func() { set = s.ensure(spec.Name, labelsOf(spec)) }
	if err != nil {
		return nil, s.died(err, effect)
	}
	effect()
	if err := s.afterEffect("ensure_scale_set", after); err != nil {
		return nil, err
	}
	return &scaleset.ScaleSet{ID: set.id, Name: set.name, Labels: set.labels}, nil
}

// CreateSession opens the scale set's session: 409 while another session
// holds it, 404 for a scale set GitHub deleted.
func (c *actionsClient) CreateSession(ctx context.Context, scaleSetID int64, owner string) (listener.Session, error) {
	s := c.s
	after, err := s.call(ctx, c.p, "create_session")
	var made *ssSessionState
	var refusal error
	effect := func() {
		set := s.setByID(scaleSetID)
		switch {
		case set == nil:
			refusal = ssError("create message session", scaleset.ErrScaleSetNotFound, 404)
		case s.sessionLive(set.session):
			s.w.stats.inc("scaleset.session_conflicts")
			s.w.tr.add("actions: create session on scale set %d -> 409 (session %s of %s)", set.id, set.session.id, set.session.owner)
			refusal = ssError("create message session", scaleset.ErrSessionConflict, 409)
		default:
			made = s.newSession(set, owner)
		}
	}
	if err != nil {
		return nil, s.died(err, effect)
	}
	effect()
	if refusal != nil {
		return nil, refusal
	}
	if err := s.afterEffect("create_session", after); err != nil {
		return nil, err // the session holds the scale set until it expires
	}
	return c.session(scaleSetID, made), nil
}

// ResumeSession refreshes a stored session: 404 once GitHub dropped it,
// deleted it or let it expire.
func (c *actionsClient) ResumeSession(ctx context.Context, scaleSetID int64, sessionID string) (listener.Session, error) {
	s := c.s
	if _, err := s.call(ctx, c.p, "resume_session"); err != nil {
		return nil, err
	}
	set := s.setByID(scaleSetID)
	if set == nil {
		return nil, ssError("refresh message session", scaleset.ErrScaleSetNotFound, 404)
	}
	sess := set.session
	if sess == nil || sess.id != sessionID || !s.sessionLive(sess) {
		return nil, ssError("refresh message session", scaleset.ErrSessionNotFound, 404)
	}
	sess.lastActive = s.w.now()
	s.w.stats.inc("scaleset.sessions_resumed")
	return c.session(scaleSetID, sess), nil
}

func (c *actionsClient) session(scaleSetID int64, st *ssSessionState) *ssSession {
	out := &ssSession{c: c, scaleSetID: scaleSetID, st: st}
	if set := c.s.setByID(scaleSetID); set != nil {
		out.stats = c.s.statistics(set)
	}
	return out
}

// ssSession is a message session as *scaleset.MessageSession presents
// it, including its one refresh after a 401.
type ssSession struct {
	c          *actionsClient
	scaleSetID int64
	st         *ssSessionState
	stats      scaleset.Statistics
}

func (m *ssSession) ID() string                      { return m.st.id }
func (m *ssSession) ScaleSetID() int64               { return m.scaleSetID }
func (m *ssSession) Statistics() scaleset.Statistics { return m.stats }
func (m *ssSession) HasStatistics() bool             { return true }

// queueCall is the start of a poll or an ack: the round trip, then the
// queue's checks. A queue token the queue refuses (401, injected, or the
// session gone) makes the client refresh the session, as
// *scaleset.MessageSession does; a refresh GitHub answers 404 (or the
// fault model drops the session there) is ErrSessionNotFound.
func (m *ssSession) queueCall(ctx context.Context, op string) (*ssScaleSet, bool, error) {
	s := m.c.s
	w := s.w
	after, err := s.call(ctx, m.c.p, op)
	if err != nil {
		return nil, false, err
	}
	set := s.setByID(m.scaleSetID)
	if set == nil {
		return nil, false, ssError(op, scaleset.ErrScaleSetNotFound, 404)
	}
	expired := w.faultsOn && chance(w.rng, s.cfg.Faults.TokenExpired)
	if expired {
		w.stats.inc("fault.scaleset.token_expired")
		s.watchFault()
	}
	if !expired && set.session == m.st {
		return set, after, nil
	}
	// The client's refresh (PATCH), then the call once more.
	if err := m.c.p.sleep(ctx, between(w.rng, 30*time.Millisecond, 300*time.Millisecond)); err != nil {
		return nil, false, err
	}
	if set.session == m.st && w.faultsOn && chance(w.rng, s.cfg.Faults.RefreshNotFound) {
		w.stats.inc("fault.scaleset.refresh_not_found")
		w.tr.add("actions: session %s dropped at its refresh (404)", m.st.id)
		s.watchFault()
		set.session = nil
	}
	if set.session != m.st {
		w.stats.inc("scaleset.session_not_found")
		return nil, false, ssError("refresh message session", scaleset.ErrSessionNotFound, 404)
	}
	m.st.lastActive = w.now()
	return set, after, nil
}

// GetMessage long-polls: the first held message after lastMessageID, or
// nil after the poll window. It may answer the last message again (a
// duplicate), and GitHub may drop the session while it waits.
func (m *ssSession) GetMessage(ctx context.Context, lastMessageID int64, maxCapacity int) (*scaleset.Message, error) {
	s := m.c.s
	w := s.w
	set, _, err := m.queueCall(ctx, "get_message")
	if err != nil {
		return nil, err
	}
	t := w.sched.mustTask(ctx)
	s.pollBegins(t, m.c.p)
	defer s.pollEnds(t)
	m.st.polls++
	defer func() { m.st.polls--; m.st.lastActive = w.now() }()
	if set.capacity != maxCapacity {
		set.capacity = maxCapacity
		w.gh.assignSoon()
	}
	if w.faultsOn && set.last != nil && chance(w.rng, s.cfg.Faults.Duplicate) {
		w.stats.inc("fault.scaleset.duplicate")
		w.tr.add("actions: message %d delivered again", set.last.id)
		return set.last.message(), nil
	}
	if w.faultsOn && len(set.delivered) > 1 && chance(w.rng, s.cfg.Faults.LateDuplicate) {
		msg := s.lateCopy(set)
		w.stats.inc("fault.scaleset.late_duplicate")
		w.tr.add("actions: message %d delivered again, late (the newest delivered is %d)", msg.ID, set.last.id)
		return msg, nil
	}
	if w.faultsOn && chance(w.rng, s.cfg.Faults.SessionDropped) {
		// GitHub drops the session while the poll waits: the poll ends
		// with a 401, and the client's refresh finds the session gone.
		w.stats.inc("fault.scaleset.session_dropped")
		w.tr.add("actions: session %s dropped by GitHub", m.st.id)
		s.watchFault()
		set.session = nil
		return nil, ssError("refresh message session", scaleset.ErrSessionNotFound, 404)
	}
	deadline := w.now().Add(ssPollWindow)
	for {
		switch {
		case set.deleted:
			return nil, ssError("get message", scaleset.ErrScaleSetNotFound, 404)
		case set.session != m.st:
			return nil, ssError("refresh message session", scaleset.ErrSessionNotFound, 404)
		}
		if msg := set.next(lastMessageID); msg != nil {
			if !msg.delivered {
				set.delivered = append(set.delivered, msg)
			}
			msg.delivered, set.last = true, msg
			w.stats.inc("scaleset.messages_delivered")
			return msg.message(), nil
		}
		if !w.now().Before(deadline) {
			w.stats.inc("scaleset.polls_empty")
			return nil, nil
		}
		if err := m.c.p.nap(ctx, deadline.Sub(w.now()), func(n *nap) { set.waiting = n }); err != nil {
			set.waiting = nil
			return nil, err
		}
		set.waiting = nil
		if err := ctx.Err(); err != nil {
			return nil, err // the listener gave up its poll (lease lost, shutdown)
		}
	}
}

// DeleteMessage acknowledges a message; an ack that fails leaves it
// held, so it comes again.
func (m *ssSession) DeleteMessage(ctx context.Context, messageID int64) error {
	s := m.c.s
	set, after, err := m.queueCall(ctx, "delete_message")
	if err != nil {
		if err == errKilled {
			return s.died(err, func() {
				if set := s.setByID(m.scaleSetID); set != nil && set.session == m.st {
					s.ack(set, messageID)
				}
			})
		}
		return err
	}
	s.ack(set, messageID)
	return s.afterEffect("delete_message", after)
}

// AcquireJobs is GHES's; the simulated github.com never offers a job to
// acquire (JobAvailable), so a call means the listener read one that was
// never sent.
func (m *ssSession) AcquireJobs(context.Context, []int64) ([]int64, error) {
	m.c.s.w.violate("the listener acquires only jobs offered", "AcquireJobs called, but no JobAvailable was sent")
	return nil, nil
}

// Close deletes the session; one GitHub no longer has counts as deleted,
// as the client's Close says.
func (m *ssSession) Close(ctx context.Context) error {
	s := m.c.s
	after, err := s.call(ctx, m.c.p, "delete_session")
	effect := func() {
		if set := s.setByID(m.scaleSetID); set != nil && set.session == m.st {
			set.session = nil
			s.w.tr.add("actions: session %s deleted", m.st.id)
		}
	}
	if err != nil {
		return s.died(err, effect)
	}
	effect()
	return s.afterEffect("delete_session", after)
}
