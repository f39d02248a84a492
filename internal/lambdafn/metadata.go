package lambdafn

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/metadata"
)

// maxMetadataBody bounds a request body handed to the handler (callbacks
// are a few hundred bytes; the handler caps them again).
const maxMetadataBody = 1 << 20

// Metadata is the MetadataFunction: runner bootstrap behind its own
// Function URL, built from the environment on the first invocation.
func Metadata() FunctionURLHandler { return NewMetadata(FromEnvironment(RoleMetadata), nil) }

// NewMetadata is the MetadataFunction with its Options from options; a
// failed start is logged to log (nil: JSON lines on stdout). A function
// that cannot start answers 503, which GARM's scripts retry.
func NewMetadata(options OptionsFunc, log *slog.Logger) FunctionURLHandler {
	app := NewLazy(RoleMetadata, func(ctx context.Context) (*MetadataApp, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return BuildMetadata(ctx, opts)
	}, log)
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return metadataUnavailable("runfleet could not start (see the metadata function's logs); retry"), nil
		}
		return a.HandleMetadata(ctx, req)
	}
}

// MetadataApp is the metadata function's: the store and the queue, and the
// instance token key. It never calls GitHub or a provider: a failed
// bootstrap only schedules the delete, which the worker does.
type MetadataApp struct {
	*App
	// cache is runfleet's actions/cache (metadata_cache.go), nil when off.
	cache *metadataCache
}

// BuildMetadata loads the metadata function's App and checks its engine
// can be built.
func BuildMetadata(ctx context.Context, opts Options) (*MetadataApp, error) {
	app, err := Load(ctx, RoleMetadata, opts)
	if err != nil {
		return nil, err
	}
	m := &MetadataApp{App: app}
	if _, err := m.bootstrapEngine(app.Logger); err != nil {
		return nil, err
	}
	if m.cache, err = buildMetadataCache(app, opts); err != nil {
		return nil, err
	}
	return m, nil
}

// HandleMetadata serves runner bootstrap (internal/metadata, the same
// handler `runfleet serve` mounts) through a Lambda Function URL (payload
// format 2.0): the event becomes an http.Request and the handler's answer
// the response. It never returns an error: a Function URL would turn one
// into a bare 502.
func (a *MetadataApp) HandleMetadata(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	log := a.InvocationLogger(ctx)
	defer a.FlushMetrics(ctx, log)
	eng, err := a.bootstrapEngine(log)
	if err != nil {
		log.ErrorContext(ctx, "engine cannot be built", "error", err)
		return metadataUnavailable("runfleet is misconfigured (see the metadata function's logs); retry later"), nil
	}
	public := "https://" + req.RequestContext.DomainName
	metadataURL, callbackURL := metadata.BaseURLs(public)
	h, err := metadata.New(metadata.Options{
		Engine:        eng,
		Tokens:        a.Tokens,
		MetadataURL:   metadataURL,
		CallbackURL:   callbackURL,
		CACertBundle:  []byte(a.Config.Metadata.CACertBundle),
		RunnerVersion: a.Config.Metadata.RunnerVersion,
		CacheAgent:    a.cache.agentConfig(log),
		Logger:        log,
	})
	if err != nil {
		log.ErrorContext(ctx, "metadata handler cannot be built", "error", err)
		return metadataUnavailable("runfleet is misconfigured (see the metadata function's logs); retry later"), nil
	}
	httpReq, err := requestFromFunctionURL(ctx, req)
	if err != nil {
		body, _ := json.Marshal(map[string]any{"error": err.Error(), "status": http.StatusBadRequest})
		return events.LambdaFunctionURLResponse{StatusCode: http.StatusBadRequest, Headers: jsonHeaders(), Body: string(body)}, nil
	}
	rec := newResponseRecorder()
	if c := a.cache.route(httpReq); c != nil {
		a.cache.serve(c, rec, httpReq, a.Metrics)
	} else {
		h.ServeHTTP(rec, httpReq)
	}
	return rec.functionURLResponse(), nil
}

// requestFromFunctionURL rebuilds the HTTP request a Function URL received.
func requestFromFunctionURL(ctx context.Context, req events.LambdaFunctionURLRequest) (*http.Request, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if base64.StdEncoding.DecodedLen(len(req.Body)) > maxMetadataBody {
			return nil, fmt.Errorf("body is larger than %d bytes", maxMetadataBody)
		}
		var err error
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return nil, fmt.Errorf("body is marked base64-encoded but is not valid base64: %v", err)
		}
	}
	method := req.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	u := &url.URL{Scheme: "https", Host: req.RequestContext.DomainName, Path: path, RawQuery: req.RawQueryString}
	httpReq, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("request %s %s: %v", method, path, err)
	}
	for name, value := range req.Headers {
		httpReq.Header.Set(name, value)
	}
	httpReq.RemoteAddr = req.RequestContext.HTTP.SourceIP
	return httpReq, nil
}

// responseRecorder collects the handler's answer.
type responseRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newResponseRecorder() *responseRecorder { return &responseRecorder{header: http.Header{}} }

func (r *responseRecorder) Header() http.Header { return r.header }

func (r *responseRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *responseRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// functionURLResponse sends binary bodies (the credential files are bytes
// the runner writes to disk as they are) base64-encoded, as Function URLs
// require, and text as text.
func (r *responseRecorder) functionURLResponse() events.LambdaFunctionURLResponse {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	headers := make(map[string]string, len(r.header))
	for name, values := range r.header {
		headers[name] = strings.Join(values, ", ")
	}
	resp := events.LambdaFunctionURLResponse{StatusCode: status, Headers: headers}
	body := r.body.Bytes()
	if strings.HasPrefix(r.header.Get("Content-Type"), "application/octet-stream") || !utf8.Valid(body) {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	} else {
		resp.Body = string(body)
	}
	return resp
}

func metadataUnavailable(message string) events.LambdaFunctionURLResponse {
	body, _ := json.Marshal(map[string]any{"error": message, "status": http.StatusServiceUnavailable})
	return events.LambdaFunctionURLResponse{StatusCode: http.StatusServiceUnavailable, Headers: jsonHeaders(), Body: string(body)}
}

func jsonHeaders() map[string]string {
	return map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
}
