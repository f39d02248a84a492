package scaleset

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// Defaults for Config's zero values.
const (
	// DefaultCallTimeout bounds every call but the long poll: a call
	// without a deadline can wedge its caller forever (ARC #4600).
	DefaultCallTimeout = 30 * time.Second
	// DefaultPollTimeout bounds the long poll. The service answers 202
	// after about 50 s with nothing to deliver.
	DefaultPollTimeout = 70 * time.Second
	// DefaultAdminRefreshMargin: the admin token is renewed this long
	// before its expiry, so no call goes out with a token about to lapse.
	DefaultAdminRefreshMargin = 2 * time.Minute
	// DefaultRegistrationTokenMargin: a registration token is reused for
	// re-registration until this long before its expiry (one hour).
	DefaultRegistrationTokenMargin = 2 * time.Minute
)

// Config is what a Client needs. Owner and Tokens are required.
type Config struct {
	// Owner is the organization, repository or enterprise the scale sets
	// belong to.
	Owner github.Owner
	// Tokens mints registration tokens (REST API) for Owner.
	Tokens RegistrationTokenSource
	// GitHubURL is the web URL of the GitHub instance:
	// https://github.com (the default), https://<tenant>.ghe.com, or a
	// GHES host.
	GitHubURL string
	// APIURL overrides the REST API URL derived from GitHubURL
	// (api.github.com, api.<tenant>.ghe.com, <host>/api/v3).
	APIURL string
	// HTTPClient sends every call; its own Timeout should be zero or
	// above PollTimeout. Default: a new http.Client.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now       func() time.Time
	UserAgent string

	CallTimeout             time.Duration
	PollTimeout             time.Duration
	AdminRefreshMargin      time.Duration
	RegistrationTokenMargin time.Duration
}

// Client talks to the Actions service for one owner. It is safe for
// concurrent use; unlike peers' clients it does not serialize calls, only
// the admin-token renewal.
type Client struct {
	cfg       Config
	http      *http.Client
	log       *slog.Logger
	now       func() time.Time
	configURL string // the owner's web URL, sent at registration
	apiURL    string

	mu    sync.Mutex // guards admin and reg, and serializes renewal
	admin adminConnection
	reg   RegistrationToken
}

// New checks cfg and returns a Client. It makes no call: the first call
// registers.
func New(cfg Config) (*Client, error) {
	if cfg.Tokens == nil {
		return nil, errors.New("scaleset: Config.Tokens is required")
	}
	if cfg.Owner.Org == "" && cfg.Owner.Enterprise == "" {
		return nil, errors.New("scaleset: Config.Owner is required")
	}
	if cfg.GitHubURL == "" {
		cfg.GitHubURL = "https://github.com"
	}
	web, err := url.Parse(strings.TrimSuffix(cfg.GitHubURL, "/"))
	if err != nil || web.Scheme == "" || web.Host == "" {
		return nil, fmt.Errorf("scaleset: GitHubURL %q is not an absolute URL", cfg.GitHubURL)
	}
	if cfg.APIURL == "" {
		cfg.APIURL = apiURLFor(web)
	}
	c := &Client{
		cfg:       cfg,
		http:      cfg.HTTPClient,
		log:       cfg.Logger,
		now:       cfg.Now,
		configURL: web.String() + "/" + ownerPath(cfg.Owner),
		apiURL:    strings.TrimSuffix(cfg.APIURL, "/"),
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg.UserAgent == "" {
		c.cfg.UserAgent = "runfleet-scaleset"
	}
	c.cfg.CallTimeout = orDefault(c.cfg.CallTimeout, DefaultCallTimeout)
	c.cfg.PollTimeout = orDefault(c.cfg.PollTimeout, DefaultPollTimeout)
	c.cfg.AdminRefreshMargin = orDefault(c.cfg.AdminRefreshMargin, DefaultAdminRefreshMargin)
	c.cfg.RegistrationTokenMargin = orDefault(c.cfg.RegistrationTokenMargin, DefaultRegistrationTokenMargin)
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// apiURLFor derives the REST API's URL from the web URL: github.com and
// GHE.com tenants have an api. host, GHES serves /api/v3.
func apiURLFor(web *url.URL) string {
	host := web.Hostname()
	switch {
	case host == "github.com" || host == "www.github.com":
		return web.Scheme + "://api.github.com"
	case strings.HasSuffix(host, ".ghe.com"):
		return web.Scheme + "://api." + web.Host
	default:
		return web.Scheme + "://" + web.Host + "/api/v3"
	}
}

// ownerPath is the owner's path under the web URL, as the registration
// call expects it: "org", "org/repo" or "enterprises/slug".
func ownerPath(o github.Owner) string {
	switch {
	case o.Enterprise != "":
		return "enterprises/" + o.Enterprise
	case o.Repo != "":
		return o.Org + "/" + o.Repo
	default:
		return o.Org
	}
}
