package cacheagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
)

// maxTwirpBody bounds a cache call the agent forwards: a few hundred bytes
// in practice, as runfleet's cache allows (64 KiB).
const maxTwirpBody = 64 << 10

// TokenSource gives the cache token runfleet minted for the machine's job.
// An error means the job has none (not registered yet, runfleet
// unreachable): the agent then answers as a cache outage.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// TokenFunc adapts a function to TokenSource.
type TokenFunc func(ctx context.Context) (string, error)

// Token implements TokenSource.
func (f TokenFunc) Token(ctx context.Context) (string, error) { return f(ctx) }

// Options configure the Agent.
type Options struct {
	// CacheURL is runfleet's cache service (serve's public URL, or the
	// metadata function's): the twirp calls go to <CacheURL>/twirp/….
	CacheURL string
	Tokens   TokenSource
	// CacheClient makes the calls to runfleet's cache (default: a client
	// with a 30 s timeout).
	CacheClient *http.Client
	// StorageClient sends the parts of a direct upload to the bucket
	// (default: a client without a timeout; a 64 MiB part takes time).
	StorageClient *http.Client
	// PassHosts are the only hosts the pass-through goes to (the results
	// hosts /etc/hosts points here); empty: any. The agent runs as root:
	// it must not be a forward proxy for every local process.
	PassHosts []string
	// Upstream carries pass-through calls to the real results host; its
	// dialer must not use /etc/hosts (Resolver.DialContext). Required.
	Upstream http.RoundTripper
	Log      *slog.Logger
}

// Counts is what the agent did, for logs and tests.
type Counts struct {
	CacheCalls, PassThrough, Outages int64
	// DirectParts are the parts sent straight to the bucket.
	DirectParts int64
	// RestoredParts are the parts fetched straight from the bucket.
	RestoredParts int64
}

// Agent is the on-machine endpoint: an http.Handler for the results host.
type Agent struct {
	o                Options
	proxy            *httputil.ReverseProxy
	cacheCalls, pass atomic.Int64
	outages          atomic.Int64
	directParts      atomic.Int64
	restoredParts    atomic.Int64
	cacheBase        string
	// uploads are the direct uploads in progress, by signed URL.
	uploadsMu sync.Mutex
	uploads   map[string]*upload
}

// New checks o and returns the agent.
func New(o Options) (*Agent, error) {
	switch {
	case o.Tokens == nil:
		return nil, errors.New("cacheagent: no token source")
	case o.Upstream == nil:
		return nil, errors.New("cacheagent: no upstream transport for the pass-through")
	case !strings.HasPrefix(o.CacheURL, "http://") && !strings.HasPrefix(o.CacheURL, "https://"):
		return nil, fmt.Errorf("cacheagent: cache URL %q is not an http(s) URL", o.CacheURL)
	}
	if o.CacheClient == nil {
		o.CacheClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.StorageClient == nil {
		// The SDK sends 8 blocks at once: keep as many connections to the
		// bucket open between them.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		o.StorageClient = &http.Client{Transport: t}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{o: o, cacheBase: strings.TrimRight(o.CacheURL, "/")}
	a.proxy = &httputil.ReverseProxy{
		// The request goes to the host it named, over TLS, byte for byte:
		// same path, query, headers (GitHub's token included) and body.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = pr.In.Host
			pr.Out.Host = pr.In.Host
		},
		Transport:     o.Upstream,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			a.o.Log.Warn("cacheagent: pass-through failed", "host", r.Host, "path", r.URL.Path, "err", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return a, nil
}

// Counts reads the counters.
func (a *Agent) Counts() Counts {
	return Counts{a.cacheCalls.Load(), a.pass.Load(), a.outages.Load(), a.directParts.Load(), a.restoredParts.Load()}
}

// ServeHTTP implements http.Handler.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, cache.TwirpPrefix) {
		a.cacheCalls.Add(1)
		a.serveCache(w, r, strings.TrimPrefix(r.URL.Path, cache.TwirpPrefix))
		return
	}
	if strings.HasPrefix(r.URL.Path, UploadPrefix) {
		a.serveUpload(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, DownloadPrefix) {
		a.serveDownload(w, r)
		return
	}
	if !a.passes(r.Host) {
		http.Error(w, "runfleet cache agent: not a results host", http.StatusMisdirectedRequest)
		return
	}
	a.pass.Add(1)
	a.proxy.ServeHTTP(w, r)
}

// passes says whether host (maybe with a port) is one the pass-through
// serves.
func (a *Agent) passes(host string) bool {
	if len(a.o.PassHosts) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, p := range a.o.PassHosts {
		if strings.EqualFold(p, host) {
			return true
		}
	}
	return false
}

// serveCache forwards one twirp call to runfleet's cache with the job's
// cache token in place of GitHub's. GitHub's token never leaves the
// machine on this path: runfleet does not need it.
func (a *Agent) serveCache(w http.ResponseWriter, r *http.Request, method string) {
	log := a.o.Log.With("method", method)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTwirpBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"code": "malformed", "msg": "request body: " + err.Error()})
		return
	}
	tok, err := a.o.Tokens.Token(r.Context())
	if err != nil {
		a.outage(w, log, method, fmt.Errorf("no cache token for this machine's job: %w", err))
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, a.cacheBase+cache.TwirpPrefix+method, bytes.NewReader(body))
	if err != nil {
		a.outage(w, log, method, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := a.o.CacheClient.Do(req)
	if err != nil {
		a.outage(w, log, method, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		// The client would retry a 5xx five times over ~25 s; runfleet's
		// cache already failed, so the agent answers the outage at once.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		a.outage(w, log, method, fmt.Errorf("runfleet's cache answered %d: %s", resp.StatusCode, bytes.TrimSpace(b)))
		return
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		a.outage(w, log, method, err)
		return
	}
	if method == "CreateCacheEntry" && resp.StatusCode == http.StatusOK {
		out = a.rewriteUpload(out, r.Host)
	}
	if method == "GetCacheEntryDownloadURL" && resp.StatusCode == http.StatusOK {
		out = a.rewriteDownload(out, r.Host)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// outage answers a call runfleet's cache could not: the client's own
// fallback then holds — a warning and a miss on restore, a warning and no
// save on save — and the job step passes. A lookup is refused with a
// non-retryable twirp error (the client warns "Failed to restore" and goes
// on); create and finalize get ok=false with a message (the client warns
// with it and skips the save).
func (a *Agent) outage(w http.ResponseWriter, log *slog.Logger, method string, err error) {
	a.outages.Add(1)
	log.Warn("cacheagent: runfleet's cache unavailable; the job goes on without it", "err", err)
	msg := "runfleet's cache is unavailable on this machine: " + err.Error()
	switch method {
	case "CreateCacheEntry", "FinalizeCacheEntryUpload":
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "message": msg})
	default:
		writeJSON(w, http.StatusPreconditionFailed, map[string]string{"code": "failed_precondition", "msg": msg})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// UpstreamTransport is the pass-through's transport: it dials the real
// results host at the addresses DNS gives (never /etc/hosts), on port
// (443 normally), and verifies its certificate against roots (nil: the
// system's).
func UpstreamTransport(r *Resolver, port string, roots *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return r.DialContext(ctx, network, net.JoinHostPort(host, port))
	}
	if roots != nil {
		t.TLSClientConfig = roots
	}
	return t
}
