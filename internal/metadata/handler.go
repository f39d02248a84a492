package metadata

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// The path prefixes the handler serves; mount the handler on both.
const (
	MetadataPrefix = "/metadata/"
	CallbackPrefix = "/callbacks/"
)

// BaseURLs returns the metadata and callback base URLs under a public base
// URL (server.public_url, or the metadata function's URL). The engine
// appends the instance name (engine.InstanceURL).
func BaseURLs(public string) (metadataURL, callbackURL string) {
	base := strings.TrimRight(public, "/")
	return base + strings.TrimSuffix(MetadataPrefix, "/"), base + strings.TrimSuffix(CallbackPrefix, "/")
}

// requestTimeout bounds one request's store reads and writes.
const requestTimeout = 10 * time.Second

// maxCallbackBody caps a callback's JSON; GARM's are a few hundred bytes.
const maxCallbackBody = 64 << 10

// Engine is what the handler needs from the engine; *engine.Engine has it.
type Engine interface {
	AuthorizeBootstrap(ctx context.Context, c engine.BootstrapClaim) (*runner.Instance, error)
	RunnerCredentials(ctx context.Context, c engine.BootstrapClaim) (string, error)
	ReportRunnerStatus(ctx context.Context, c engine.BootstrapClaim, r engine.RunnerReport) (*runner.Instance, error)
}

var _ Engine = (*engine.Engine)(nil)

// Options configure the handler.
type Options struct {
	Engine Engine
	Tokens *Tokens
	// MetadataURL and CallbackURL are the bases machines were given (see
	// BaseURLs); the install script and runner-metadata name them.
	MetadataURL string
	CallbackURL string
	// CACertBundle is PEM: extra root certificates a machine should trust
	// (system/cert-bundle). Empty serves an empty bundle.
	CACertBundle []byte
	// RunnerVersion is the actions/runner release the install script
	// downloads when the image has none (default DefaultRunnerVersion).
	RunnerVersion string
	// CacheAgent configures a machine's cache agent (metadata/cache-agent);
	// nil: runfleet's actions/cache is off.
	CacheAgent CacheAgentFunc
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Handler serves the metadata and callback routes.
type Handler struct {
	engine        Engine
	tokens        *Tokens
	metadataURL   string
	callbackURL   string
	certs         certBundle
	runnerVersion string
	cacheAgentFn  CacheAgentFunc
	log           *slog.Logger
}

// New checks the options and returns the handler.
func New(opts Options) (*Handler, error) {
	switch {
	case opts.Engine == nil:
		return nil, errors.New("metadata: no engine")
	case opts.Tokens == nil:
		return nil, errors.New("metadata: no instance token verifier")
	}
	certs, err := parseCertBundle(opts.CACertBundle)
	if err != nil {
		return nil, err
	}
	if opts.RunnerVersion == "" {
		opts.RunnerVersion = DefaultRunnerVersion
	}
	if !runnerVersionPattern.MatchString(opts.RunnerVersion) {
		return nil, fmt.Errorf("metadata: runner version %q is not of the form 2.321.0", opts.RunnerVersion)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Handler{
		engine: opts.Engine, tokens: opts.Tokens,
		metadataURL: opts.MetadataURL, callbackURL: opts.CallbackURL,
		certs: certs, runnerVersion: opts.RunnerVersion, cacheAgentFn: opts.CacheAgent, log: log,
	}, nil
}

// route is one endpoint: its method and what serves it once the request's
// token is accepted for the instance.
type route struct {
	method string
	serve  func(h *Handler, w http.ResponseWriter, r *http.Request, req *request)
}

// request is an authorised bootstrap request.
type request struct {
	claim    engine.BootstrapClaim
	instance *runner.Instance
	log      *slog.Logger
}

var metadataRoutes = map[string]route{
	"runner-registration-token":         {http.MethodGet, (*Handler).registrationToken},
	"credentials/runner":                {http.MethodGet, credentialFile(".runner")},
	"credentials/credentials":           {http.MethodGet, credentialFile(".credentials")},
	"credentials/credentials_rsaparams": {http.MethodGet, credentialFile(".credentials_rsaparams")},
	"system/service-name":               {http.MethodGet, (*Handler).serviceName},
	"systemd/unit-file":                 {http.MethodGet, (*Handler).unitFile},
	"system/cert-bundle":                {http.MethodGet, (*Handler).certBundle},
	"install-script":                    {http.MethodGet, (*Handler).installScript},
	"runner-metadata":                   {http.MethodGet, (*Handler).runnerMetadata},
	"cache-agent":                       {http.MethodGet, (*Handler).cacheAgent},
}

var callbackRoutes = map[string]route{
	"status":      {http.MethodPost, (*Handler).status},
	"system-info": {http.MethodPost, (*Handler).systemInfo},
}

// ServeHTTP routes <prefix><instance>/<endpoint>[/], checks the token, and
// serves. A trailing slash is ignored: GARM's scripts add one to some
// endpoints and not others.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var routes map[string]route
	var rest string
	switch {
	case strings.HasPrefix(r.URL.Path, MetadataPrefix):
		routes, rest = metadataRoutes, strings.TrimPrefix(r.URL.Path, MetadataPrefix)
	case strings.HasPrefix(r.URL.Path, CallbackPrefix):
		routes, rest = callbackRoutes, strings.TrimPrefix(r.URL.Path, CallbackPrefix)
	default:
		h.notFound(w, r)
		return
	}
	instance, endpoint, _ := strings.Cut(rest, "/")
	endpoint = strings.TrimSuffix(endpoint, "/")
	rt, ok := routes[endpoint]
	if !ok || instance == "" {
		h.notFound(w, r)
		return
	}
	if unescaped, err := url.PathUnescape(instance); err == nil {
		instance = unescaped
	}
	log := h.log.With("instance", instance, "endpoint", endpoint)
	if r.Method != rt.method {
		w.Header().Set("Allow", rt.method)
		h.refuse(w, log, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed; use %s", r.Method, rt.method))
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	req, status, reason := h.authorize(ctx, r, instance, log)
	if status == http.StatusUnauthorized {
		// RFC 9110: a 401 names the scheme that would be accepted.
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+Audience+`"`)
	}
	if status != 0 {
		h.refuse(w, log, status, reason)
		return
	}
	rt.serve(h, w, r.WithContext(ctx), req)
}

// authorize verifies the Bearer token, checks that it names the instance of
// the URL, and asks the engine whether the token is still accepted. It
// returns a status and reason for a refusal.
func (h *Handler) authorize(ctx context.Context, r *http.Request, instance string, log *slog.Logger) (*request, int, string) {
	raw, ok := bearerToken(r)
	if !ok {
		return nil, http.StatusUnauthorized, "missing instance token: send it as Authorization: Bearer <instance-token>"
	}
	claim, err := h.tokens.Verify(raw)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			return nil, http.StatusUnauthorized, "instance token refused: " + te.Reason
		}
		return nil, http.StatusUnauthorized, "instance token refused"
	}
	if subtle.ConstantTimeCompare([]byte(claim.Instance), []byte(instance)) != 1 {
		return nil, http.StatusForbidden, fmt.Sprintf("the token is for instance %q, not this one", claim.Instance)
	}
	c := engine.BootstrapClaim{Instance: claim.Instance, Pool: claim.Pool, Attempt: claim.Attempt}
	inst, err := h.engine.AuthorizeBootstrap(ctx, c)
	if err != nil {
		status, reason := h.engineRefusal(err, log)
		return nil, status, reason
	}
	return &request{claim: c, instance: inst, log: log.With("create_attempt", c.Attempt)}, 0, ""
}

// engineRefusal maps an engine error to a status and reason: refusals are
// 403 (token no longer accepted) or 409 (makes no sense now); anything else
// is the control plane's fault, 503, with the detail only in the log.
func (h *Handler) engineRefusal(err error, log *slog.Logger) (int, string) {
	var refused *engine.BootstrapRefusedError
	if errors.As(err, &refused) {
		if refused.Conflict {
			return http.StatusConflict, refused.Reason
		}
		return http.StatusForbidden, refused.Reason
	}
	log.Error("bootstrap request failed", "error", err)
	return http.StatusServiceUnavailable, "the control plane could not answer; retry"
}

// bearerToken reads "Authorization: Bearer <token>" (scheme case-insensitive).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
