package scaleset

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// MessageSession is a scale set's message session: the one listener
// GitHub delivers that scale set's jobs to. It is safe for concurrent
// use; the listener that owns it is expected to be its only user.
type MessageSession struct {
	c          *Client
	scaleSetID int64

	mu sync.Mutex
	s  wireSession
}

// wireSession is the session object create and refresh answer.
type wireSession struct {
	SessionID               string        `json:"sessionId"`
	OwnerName               string        `json:"ownerName"`
	RunnerScaleSet          *wireScaleSet `json:"runnerScaleSet,omitempty"`
	MessageQueueURL         string        `json:"messageQueueUrl"`
	MessageQueueAccessToken string        `json:"messageQueueAccessToken"`
	Statistics              *Statistics   `json:"statistics"`
}

func sessionPath(scaleSetID int64, sessionID string) string {
	p := scaleSetsPath + "/" + itoa(scaleSetID) + "/sessions"
	if sessionID != "" {
		p += "/" + sessionID
	}
	return p
}

// CreateSession opens the scale set's message session, named for owner
// (a host or replica name: GitHub's conflict message shows it).
// ErrSessionConflict means another session holds the scale set.
//
// GitHub once answered a create with an empty queue URL (ARC #4370): the
// session is then refreshed once, and deleted if it still has none, so
// that an unusable session does not lock the scale set.
func (c *Client) CreateSession(ctx context.Context, scaleSetID int64, owner string) (*MessageSession, error) {
	m := &MessageSession{c: c, scaleSetID: scaleSetID}
	var s wireSession
	if _, err := c.service(ctx, sessionPath(scaleSetID, ""), call{
		op: "create message session", res: resSession, method: http.MethodPost,
		body: map[string]string{"ownerName": owner}, ok: []int{http.StatusOK, http.StatusCreated}, out: &s,
	}); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == ErrSessionNotFound {
			// A 404 on create names the scale set, not a session.
			e.Kind = ErrScaleSetNotFound
		}
		return nil, err
	}
	if s.SessionID == "" {
		return nil, &Error{Op: "create message session", Kind: ErrBadResponse, Err: errors.New("the answer has no session id")}
	}
	m.s = s
	if s.MessageQueueURL == "" || s.MessageQueueAccessToken == "" {
		c.log.WarnContext(ctx, "scaleset: a new session came without a queue URL or token; refreshing it", "scale_set_id", scaleSetID, "session_id", s.SessionID)
		if err := m.Refresh(ctx); err != nil || !m.usable() {
			_ = m.Close(ctx)
			return nil, &Error{Op: "create message session", Kind: ErrBadResponse, Err: errors.New("the session has no message queue URL or token")}
		}
	}
	return m, nil
}

// ResumeSession takes over a session this listener stored before a
// restart: it refreshes it (a new queue token). ErrSessionNotFound means
// GitHub dropped it: create a new one.
func (c *Client) ResumeSession(ctx context.Context, scaleSetID int64, sessionID string) (*MessageSession, error) {
	m := &MessageSession{c: c, scaleSetID: scaleSetID, s: wireSession{SessionID: sessionID}}
	if err := m.Refresh(ctx); err != nil {
		return nil, err
	}
	if !m.usable() {
		return nil, &Error{Op: "resume message session", Kind: ErrBadResponse, Err: errors.New("the session has no message queue URL or token")}
	}
	return m, nil
}

// ID is the session's id: persist it to resume after a crash.
func (m *MessageSession) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s.SessionID
}

// ScaleSetID is the scale set the session listens to.
func (m *MessageSession) ScaleSetID() int64 { return m.scaleSetID }

// Statistics are those the session was created or last refreshed with.
func (m *MessageSession) Statistics() Statistics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s.Statistics == nil {
		return Statistics{}
	}
	return *m.s.Statistics
}

// HasStatistics reports whether GitHub sent statistics with the session's
// create or last refresh; without them Statistics is the zero value, which
// must not be read as "nothing assigned".
func (m *MessageSession) HasStatistics() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s.Statistics != nil
}

func (m *MessageSession) usable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s.MessageQueueURL != "" && m.s.MessageQueueAccessToken != ""
}

// Refresh renews the session's queue token (PATCH). ErrSessionNotFound
// means GitHub dropped the session; ErrScaleSetNotFound, the scale set.
func (m *MessageSession) Refresh(ctx context.Context) error {
	id := m.ID()
	var s wireSession
	if _, err := m.c.service(ctx, sessionPath(m.scaleSetID, id), call{
		op: "refresh message session", res: resSession, method: http.MethodPatch, ok: []int{http.StatusOK}, out: &s,
	}); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.SessionID == "" {
		s.SessionID = id
	}
	m.s = s
	return nil
}

// Close deletes the session, freeing the scale set for the next listener
// at once (a session left behind blocks it with 409 until GitHub expires
// it). A session GitHub already dropped or expired counts as deleted.
// Call it on every exit, with a context of its own: the listener's is
// usually cancelled by then.
func (m *MessageSession) Close(ctx context.Context) error {
	_, err := m.c.service(ctx, sessionPath(m.scaleSetID, m.ID()), call{
		op: "delete message session", res: resSession, method: http.MethodDelete, ok: []int{http.StatusNoContent, http.StatusOK},
	})
	if errors.Is(err, ErrSessionNotFound) || errors.Is(err, ErrSessionExpired) {
		return nil
	}
	return err
}

// queue returns the queue URL and token to use now.
func (m *MessageSession) queue() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s.MessageQueueURL, m.s.MessageQueueAccessToken
}

// QueueTokenExpiry is when the queue token expires, when it is a JWT
// with an exp claim; zero when that cannot be read.
func (m *MessageSession) QueueTokenExpiry() time.Time {
	_, token := m.queue()
	return jwtExpiry(token)
}

// queueCall makes a call with the queue token; urlFor builds its URL from
// the queue URL. A token known to expire within AdminRefreshMargin is
// renewed first. A 401 refreshes the session and sends once more, as the
// protocol asks; a refresh that fails returns its own error (e.g.
// ErrSessionNotFound), which tells the caller more than the 401 did.
func (m *MessageSession) queueCall(ctx context.Context, urlFor func(queueURL string) string, k call) (int, error) {
	if exp := m.QueueTokenExpiry(); !exp.IsZero() && !m.c.now().Add(m.c.cfg.AdminRefreshMargin).Before(exp) {
		if err := m.Refresh(ctx); err != nil {
			return 0, err
		}
	}
	for attempt := 0; ; attempt++ {
		qurl, token := m.queue()
		k.url, k.auth = urlFor(qurl), "Bearer "+token
		status, err := m.c.send(ctx, k)
		if attempt > 0 || !errors.Is(err, ErrQueueTokenExpired) {
			return status, err
		}
		m.c.log.InfoContext(ctx, "scaleset: queue token refused; refreshing the session", "op", k.op, "session_id", m.ID())
		if rerr := m.Refresh(ctx); rerr != nil {
			return 0, rerr
		}
	}
}
