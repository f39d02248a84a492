// Package rest is runfleet's real GitHub client: the github.GitHub port on
// go-github v57, for organization, repository and enterprise runners on
// github.com or GitHub Enterprise Server.
//
// It authenticates as a GitHub App installation (ghinstallation, one cached
// go-github client per installation, built once and reused for the life of
// the process — across warm Lambda invocations too) or with a personal
// access token. Every GitHub answer runfleet acts on is turned into the
// port's typed errors: 404 on remove is success, 404 on a workflow job is
// github.ErrJobNotFound, 422 is github.ErrRunnerBusy, rate limits (403/429,
// primary and secondary) are *github.RateLimitError with the time to retry,
// and a 403 that is not a rate limit is a *github.PermissionError naming the
// permission to grant. It counts every request it sends and records each
// installation's remaining budget.
package rest

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v4"
	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
)

// Options configure New. Set either the App fields (AppID, PrivateKey and
// optionally InstallationID) or Token.
type Options struct {
	// BaseURL is a GitHub Enterprise Server API root, such as
	// "https://ghes.example.com/api/v3" ("/api/v3" is added when missing).
	// Empty means api.github.com.
	BaseURL string

	// AppID and PrivateKey (PEM) authenticate as a GitHub App.
	AppID      int64
	PrivateKey []byte
	// InstallationID is used for calls whose owner carries no installation
	// id. With neither, the installation is looked up from the owner (one
	// call per owner, cached).
	InstallationID int64

	// Token is a personal access token, instead of an App.
	Token string

	// Transport carries every request; default a clone of
	// http.DefaultTransport, shared by all installations.
	Transport http.RoundTripper
	// RequestTimeout bounds each HTTP request; default 30s.
	RequestTimeout time.Duration
	// Logger receives debug lines (rate-limit budget) and notices (stale
	// runners removed). Default: discard.
	Logger *slog.Logger
	// Budget limits each credential's requests (see internal/github/budget:
	// points per minute, requests in flight); zero fields mean the
	// defaults. Each installation, the App itself (token mints, installation
	// look-ups) and a token gets its own budget with these limits.
	Budget budget.Limits
	// Meters, when set, makes the meter that keeps each credential's
	// budget state, by its key ("installation:<id>", "app:<id>", "token"): a
	// store-backed one (package storemeter) shares the budget among every
	// process using the credential, as Lambda's concurrent invocations
	// must. Nil keeps each budget in this process, enough for one
	// `runfleet serve`. Requests in flight are capped per process either
	// way.
	Meters func(credential string) budget.Meter
	// Now defaults to time.Now; rate-limit delays are measured by it.
	Now func() time.Time
	// Sleep waits for budget (default: a timer). A test clock whose Sleep
	// advances its Now makes the waits instant.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is the GitHub port over go-github. It is safe for concurrent use;
// make one per process and keep it.
type Client struct {
	baseURL string
	appID   int64
	key     *rsa.PrivateKey // nil with a token
	token   string
	defInst int64
	base    http.RoundTripper
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	limits  budget.Limits
	meters  func(string) budget.Meter

	telemetry telemetry

	mu            sync.Mutex
	installations map[int64]*installation
	appClient     *gogithub.Client // authenticates as the App itself (JWT)
	found         map[string]int64 // owner -> discovered installation id
	// aside are the owners (their installation look-up) and the
	// installations (their token) GitHub answered the App cannot use, by
	// ownerAsideKey or installationAsideKey (setaside.go).
	aside   map[string]*setAside
	groups  map[groupKey]int64
	budgets map[string]*budget.Budget // by credential (budgetKey)
}

var _ github.GitHub = (*Client)(nil)

// installation is one authenticated go-github client and the budgets its
// requests spend. PAT mode has one, with id 0.
type installation struct {
	id int64
	gh *gogithub.Client
	// calls is the installation's budget (the token's, with a PAT); mints
	// the App's, which its token mints spend (nil with a PAT).
	calls, mints *budget.Budget
	// minted: GitHub has issued this installation a token (pacer).
	minted atomic.Bool
}

// New builds a client. It parses the private key up front, so a bad key is
// reported at start rather than at the first job.
func New(opts Options) (*Client, error) {
	app := opts.AppID != 0 || len(opts.PrivateKey) > 0
	switch {
	case app && opts.Token != "":
		return nil, errors.New("github: set either App credentials or a token, not both")
	case !app && opts.Token == "":
		return nil, errors.New("github: no credentials: set App id and private key, or a token")
	case app && opts.AppID <= 0:
		return nil, errors.New("github: App id must be > 0")
	case app && len(opts.PrivateKey) == 0:
		return nil, errors.New("github: App private key is empty")
	case opts.InstallationID < 0:
		return nil, errors.New("github: installation id must be ≥ 0")
	}
	if err := opts.Budget.WithDefaults().Validate(); err != nil {
		return nil, fmt.Errorf("github: budget: %w", err)
	}
	c := &Client{
		baseURL:       strings.TrimSpace(opts.BaseURL),
		appID:         opts.AppID,
		token:         opts.Token,
		defInst:       opts.InstallationID,
		base:          opts.Transport,
		timeout:       opts.RequestTimeout,
		log:           opts.Logger,
		now:           opts.Now,
		sleep:         opts.Sleep,
		limits:        opts.Budget.WithDefaults(),
		meters:        opts.Meters,
		budgets:       make(map[string]*budget.Budget),
		installations: make(map[int64]*installation),
		found:         make(map[string]int64),
		aside:         make(map[string]*setAside),
		groups:        make(map[groupKey]int64),
	}
	if app {
		key, err := jwt.ParseRSAPrivateKeyFromPEM(opts.PrivateKey)
		if err != nil {
			return nil, privateKeyError(err)
		}
		c.key = key
	}
	if c.base == nil {
		c.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	if c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.telemetry.init(c.now)
	// Build one client now: it checks the base URL at start.
	if _, err := c.newGoGitHub(http.DefaultTransport); err != nil {
		return nil, err
	}
	return c, nil
}

// newGoGitHub makes a go-github client over rt, pointed at the base URL.
func (c *Client) newGoGitHub(rt http.RoundTripper) (*gogithub.Client, error) {
	gh := gogithub.NewClient(&http.Client{Transport: rt, Timeout: c.timeout})
	gh.UserAgent = "runfleet"
	if c.baseURL == "" {
		return gh, nil
	}
	gh, err := gh.WithEnterpriseURLs(c.baseURL, c.baseURL)
	if err != nil {
		return nil, fmt.Errorf("github: base URL %q: %w", c.baseURL, err)
	}
	return gh, nil
}

// apiRoot is the API root ghinstallation mints tokens under, without the
// trailing slash ("https://api.github.com", "https://ghes/api/v3").
func apiRoot(gh *gogithub.Client) string {
	return strings.TrimSuffix(gh.BaseURL.String(), "/")
}

// privateKeyError explains an unusable App key without echoing the
// parser's ASN.1 details, which describe the key's bytes.
func privateKeyError(err error) error {
	const what = "github: the App private key is not usable: want the RSA private key GitHub generated, in PEM form"
	if errors.Is(err, jwt.ErrKeyMustBePEMEncoded) || errors.Is(err, jwt.ErrNotRSAPrivateKey) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return errors.New(what + " (it does not parse as PKCS#1 or PKCS#8)")
}
