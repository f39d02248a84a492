package githubtest

import (
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GHESPathPrefix is where GitHub Enterprise Server serves its REST API; the
// fake serves every route both at the root (api.github.com style) and under
// this prefix.
const GHESPathPrefix = "/api/v3"

// DefaultRateLimit is GitHub's primary limit for an App installation.
const DefaultRateLimit = 5000

// DefaultTokenTTL is how long GitHub's installation access tokens last.
const DefaultTokenTTL = time.Hour

// Server is a fake GitHub. It is safe for concurrent use; every request and
// every control method is serialised by one lock, so handlers see a
// consistent state.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu  sync.Mutex
	now func() time.Time
	// apps are the GitHub Apps the server trusts, by id; the first one
	// added owns the installations WithInstallation adds.
	apps     map[int64]*appIdentity
	firstApp int64
	// refusedApps are the Apps GitHub refuses outright (RefuseApp).
	refusedApps   map[int64]bool
	pats          map[string]bool
	tokens        map[string]*installationToken
	installations map[int64]*installation
	tokenTTL      time.Duration
	rateLimit     int
	buckets       map[string]*rateBucket
	exhaustedTill time.Time
	secondary     *secondaryModel // nil: secondary limits off
	inFlight      inFlight

	owners       map[string]*owner // by owner key (see ownerKey)
	runners      map[int64]*Runner // by runner id
	jitConfigs   map[string]int64  // encoded JIT config -> runner id
	jobs         map[int64]*Job
	runnerApps   []RunnerApplication // nil: DefaultRunnerApplications
	nextRunnerID int64
	nextGroupID  int64
	nextLabelID  int64
	labelIDs     map[string]int64
	faults       []*activeFault
	// registrationTokens are the runner registration tokens minted.
	registrationTokens []RegistrationToken
	registrationSeq    int64
	calls              []Call
	requestSeq         int64

	// The webhook delivery log (deliveries.go), oldest first.
	deliveries       []*Delivery
	nextDeliveryID   int64
	deliveryFailRate float64
	deliveryFailKind DeliveryFailure
	// hooks are the organization and repository webhooks (hooks.go), by
	// id: the owner key each belongs to.
	hooks map[int64]string
}

// Option configures a Server.
type Option func(*Server)

// WithApp registers the GitHub App whose JWTs the access-token endpoint
// accepts: iss must be appID and the RS256 signature must verify with key
// (the public half of what GenerateAppKey returns).
func WithApp(appID int64, key *rsa.PublicKey) Option {
	return func(s *Server) {
		if s.apps == nil {
			s.apps = map[int64]*appIdentity{}
		}
		if len(s.apps) == 0 {
			s.firstApp = appID
		}
		s.apps[appID] = &appIdentity{id: appID, key: key}
	}
}

// WithToken accepts pat as a personal access token ("token <pat>" or
// "Bearer <pat>") with access to every owner.
func WithToken(pat string) Option {
	return func(s *Server) { s.pats[pat] = true }
}

// WithInstallation adds an App installation on account: an organization
// login, a user login, or "enterprise:<slug>" ("" reaches every owner).
func WithInstallation(id int64, account string) Option {
	return func(s *Server) { s.installations[id] = &installation{id: id, account: account} }
}

// WithAppInstallation adds an installation of the App appID (added with
// WithApp) on account: several Apps installed on one organization each
// have an installation of their own, with its own rate limit.
func WithAppInstallation(appID, id int64, account string) Option {
	return func(s *Server) { s.installations[id] = &installation{id: id, account: account, appID: appID} }
}

// WithClock replaces time.Now for token expiry, JWT checks and rate-limit
// windows.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithRateLimit sets the primary rate limit per identity (installation, PAT
// or App) and hour; once spent, calls answer 403 with
// x-ratelimit-remaining: 0 until the window resets, as GitHub does.
func WithRateLimit(limit int) Option {
	return func(s *Server) { s.rateLimit = limit }
}

// WithTokenTTL sets how long issued installation tokens stay valid.
func WithTokenTTL(d time.Duration) Option {
	return func(s *Server) { s.tokenTTL = d }
}

// NewServer starts a fake GitHub that is closed when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		t:             t,
		now:           time.Now,
		pats:          map[string]bool{},
		refusedApps:   map[int64]bool{},
		tokens:        map[string]*installationToken{},
		installations: map[int64]*installation{},
		tokenTTL:      DefaultTokenTTL,
		rateLimit:     DefaultRateLimit,
		buckets:       map[string]*rateBucket{},
		owners:        map[string]*owner{},
		runners:       map[int64]*Runner{},
		jitConfigs:    map[string]int64{},
		jobs:          map[int64]*Job{},
		labelIDs:      map[string]int64{},
		// Runner groups other than the default (id 1) start above it.
		nextGroupID: 2,
		// Distinct id ranges make a runner id passed where a job id is
		// expected (or the reverse) fail loudly instead of matching.
		nextRunnerID: 1001,
		nextLabelID:  1,
	}
	for _, opt := range opts {
		opt(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the api.github.com-style base URL, with the trailing slash
// go-github's BaseURL requires. ghinstallation wants it without the slash.
func (s *Server) URL() string { return s.srv.URL + "/" }

// GHESURL is a GitHub Enterprise Server-style base URL (".../api/v3/").
func (s *Server) GHESURL() string { return s.srv.URL + GHESPathPrefix + "/" }

// Client is an http.Client for the server (no auth added).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close stops the server early; NewServer already arranges it at cleanup.
func (s *Server) Close() { s.srv.Close() }

// stripPrefix returns the API path and the base it was served under.
func stripPrefix(path string) (apiPath, base string) {
	if rest, ok := strings.CutPrefix(path, GHESPathPrefix); ok && (rest == "" || rest[0] == '/') {
		return rest, GHESPathPrefix
	}
	return path, ""
}
