package scalesettest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// Options shape the fake; zero values take the defaults below.
type Options struct {
	// PollWindow is how long a poll waits for a message before 202.
	// GitHub's is about 50 s; tests want it short. Default 200 ms.
	PollWindow time.Duration
	// SessionTTL: a session nobody polls, refreshes or acknowledges
	// through for this long is expired, and a new session may replace
	// it. GitHub's is undocumented (guess). Default 2 min.
	SessionTTL time.Duration
	// QueueTokenTTL: a queue token older than this is refused (401).
	// Reports say about 50 min. Default 50 min.
	QueueTokenTTL time.Duration
	// AdminTokenTTL: the admin JWT's lifetime (undocumented: guess).
	// Default 1 h.
	AdminTokenTTL time.Duration
	// QueueTokenJWT makes queue tokens JWTs with an exp claim.
	QueueTokenJWT bool
	// AcquireRequired: jobs arrive as JobAvailable and must be acquired
	// (GHES); otherwise as JobAssigned (github.com).
	AcquireRequired bool
	// Owner the registration accepts. Default org "octo-org".
	Owner github.Owner
	// MaxBatch: the most job messages one delivery holds (GitHub: 50).
	MaxBatch int
	// WebURL is the GitHub web URL registration expects the owner under;
	// default the fake's own (URL). A test that puts the fake behind one
	// address with a fake REST API sets that address.
	WebURL string
	// ExternalToken, when set, accepts registration tokens minted outside
	// the fake (by a fake REST API) besides the fake's own (Tokens).
	ExternalToken func(token string) bool
}

// Server is the fake Actions service. Its methods are safe for
// concurrent use with the calls it serves.
type Server struct {
	t    testing.TB
	opts Options
	http *httptest.Server

	mu      sync.Mutex
	offset  time.Duration // Advance moves the fake's clock
	changed chan struct{} // closed and replaced when a message is queued
	seq     int64
	calls   []Call
	faults  map[Op][]fault

	regTokens   map[string]time.Time // registration token → expiry
	mints       int
	adminTokens map[string]time.Time // admin token → expiry
	groups      map[int64]*group
	sets        map[int64]*scaleSet
	sessions    map[string]*session // by session id
	runners     map[int64]*runnerRecord
	jobs        map[int64]*job // by runner request id
	duplicate   bool           // the next delivered message is delivered twice
	redeliver   *queued        // the message to deliver again, regardless
	// emptyQueueURLs is how many session answers lack the queue URL.
	emptyQueueURLs int
}

// New starts a fake with a default runner group and returns it; it closes
// with the test.
func New(t testing.TB, opts Options) *Server {
	if opts.PollWindow <= 0 {
		opts.PollWindow = 200 * time.Millisecond
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 2 * time.Minute
	}
	if opts.QueueTokenTTL <= 0 {
		opts.QueueTokenTTL = 50 * time.Minute
	}
	if opts.AdminTokenTTL <= 0 {
		opts.AdminTokenTTL = time.Hour
	}
	if opts.Owner.Org == "" && opts.Owner.Enterprise == "" {
		opts.Owner = github.Owner{Org: "octo-org"}
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 50
	}
	s := &Server{
		t: t, opts: opts, changed: make(chan struct{}), faults: map[Op][]fault{},
		regTokens: map[string]time.Time{}, adminTokens: map[string]time.Time{},
		groups: map[int64]*group{}, sets: map[int64]*scaleSet{}, sessions: map[string]*session{},
		runners: map[int64]*runnerRecord{}, jobs: map[int64]*job{},
	}
	s.addGroupLocked("default", true)
	s.http = httptest.NewServer(s.routes())
	t.Cleanup(s.http.Close)
	return s
}

// URL is the fake GitHub's web URL (Config.GitHubURL).
func (s *Server) URL() string { return s.http.URL }

// APIURL is the fake REST API's URL (Config.APIURL).
func (s *Server) APIURL() string { return s.http.URL + "/api" }

// ServiceURL is the Actions service URL registration hands out.
func (s *Server) ServiceURL() string { return s.http.URL + "/service/" }

// Owner is the owner the fake registers.
func (s *Server) Owner() github.Owner { return s.opts.Owner }

// Now is the fake's clock; give it to the client (Config.Now) so both
// agree on token expiry.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked()
}

func (s *Server) nowLocked() time.Time { return time.Now().Add(s.offset) }

// Advance moves the fake's clock forward: tokens and stale sessions age.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
}

// Config is a client configuration for this fake, on its clock.
func (s *Server) Config() scaleset.Config {
	web := s.URL()
	if s.opts.WebURL != "" {
		web = s.opts.WebURL
	}
	return scaleset.Config{Owner: s.opts.Owner, Tokens: s.Tokens(), GitHubURL: web, APIURL: s.APIURL(), Now: s.Now}
}

// Client returns a client for this fake (Config).
func (s *Server) Client(tb testing.TB) *scaleset.Client {
	tb.Helper()
	c, err := scaleset.New(s.Config())
	if err != nil {
		tb.Fatalf("scalesettest: new client: %v", err)
	}
	return c
}

// Tokens is a registration-token source that mints from this fake, as
// the REST API's registration-token endpoint would.
func (s *Server) Tokens() scaleset.RegistrationTokenSource { return tokenSource{s} }

type tokenSource struct{ s *Server }

func (ts tokenSource) RegistrationToken(_ context.Context, owner github.Owner) (scaleset.RegistrationToken, error) {
	s := ts.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner.String() != s.opts.Owner.String() {
		return scaleset.RegistrationToken{}, fmt.Errorf("scalesettest: no installation for %s", owner)
	}
	s.mints++
	tok := s.newIDLocked("reg")
	exp := s.nowLocked().Add(time.Hour)
	s.regTokens[tok] = exp
	return scaleset.RegistrationToken{Token: tok, ExpiresAt: exp}, nil
}

// Mints is how many registration tokens were minted.
func (s *Server) Mints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mints
}

// newIDLocked returns a unique opaque string.
func (s *Server) newIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%d-%d", prefix, s.seq, time.Now().UnixNano())
}

// nextLocked returns the next number of a sequence shared by every id.
func (s *Server) nextLocked() int64 {
	s.seq++
	return s.seq
}

// adminJWTLocked makes an admin token shaped like a JWT with an exp claim
// (the client reads exp to renew in time; the signature is meaningless).
func (s *Server) adminJWTLocked() string {
	exp := s.nowLocked().Add(s.opts.AdminTokenTTL)
	tok := s.jwtLocked("admin", exp)
	s.adminTokens[tok] = exp
	return tok
}

// jwtLocked makes a unique unsigned JWT expiring at exp.
func (s *Server) jwtLocked(kind string, exp time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "jti": s.newIDLocked(kind)})
	return head + "." + enc.EncodeToString(claims) + ".sig"
}

// queueTokenLocked is a new queue token: opaque by default, a JWT with
// its expiry when Options.QueueTokenJWT says so (guess: GitHub's form is
// not documented; the client renews a JWT before it expires and an
// opaque token on its 401).
func (s *Server) queueTokenLocked() string {
	if s.opts.QueueTokenJWT {
		return s.jwtLocked("queue", s.nowLocked().Add(s.opts.QueueTokenTTL))
	}
	return s.newIDLocked("queue")
}

// notifyLocked wakes the polls waiting for a message.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeException answers the Actions service's error shape.
func writeException(w http.ResponseWriter, status int, typeName, message string) {
	w.Header().Set("ActivityId", fmt.Sprintf("activity-%d", time.Now().UnixNano()))
	writeJSON(w, status, map[string]string{"typeName": typeName, "message": message})
}
