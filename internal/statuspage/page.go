// Package statuspage is the read-only status page `runfleet serve` shows
// at /: pools with live, max and waiting demand and what they cost, instances by status, open
// jobs, recent transitions and a queue-time chart of the last hour. It is
// one self-contained HTML document (CSS inline, the chart an inline SVG
// drawn on the server, no script), so it works offline and behind any
// proxy. Transitions and queue times come from a Recorder the engine
// reports to; everything else is read from the store on each load.
package statuspage

import (
	"bytes"
	"context"
	"embed"
	"log/slog"
	"net/http"
	"time"
)

// RefreshInterval is how often the page reloads itself.
const RefreshInterval = 5 * time.Second

// readTimeout bounds the store reads of one page load.
const readTimeout = 5 * time.Second

//go:embed assets/style.css
var assets embed.FS

// pageCSS is the page's whole style, inlined (no asset is ever fetched).
var pageCSS = mustRead("assets/style.css")

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Options configure the page.
type Options struct {
	Source   Source
	Recorder *Recorder
	// Token is the operator API's token (config.APITokenKeys): the page asks
	// for the same. Empty means loopback clients only.
	Token  string
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

type page struct {
	src    Source
	rec    *Recorder
	access access
	log    *slog.Logger
	now    func() time.Time
	costs  poolCosts
}

// New returns the page's handler; mount it at "/{$}" and at "/why/{job}"
// (one job's timeline, linked from the job rows).
func New(opts Options) http.Handler {
	p := &page{src: opts.Source, rec: opts.Recorder, access: newAccess(opts.Token), log: opts.Logger, now: opts.Now}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.rec == nil {
		p.rec = NewRecorder(p.now)
	}
	return p
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "the status page is read-only: use GET")
		return
	}
	if problem := p.access.check(r); problem != "" {
		// The presented token is never logged: it may be a real secret
		// typed into the wrong server.
		p.log.WarnContext(r.Context(), "status page request refused", "reason", problem, "remote", r.RemoteAddr)
		status := http.StatusUnauthorized
		if !p.access.hasToken {
			status = http.StatusForbidden
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="runfleet"`)
		}
		plain(w, status, problem)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	var buf bytes.Buffer
	if ref := r.PathValue("job"); ref != "" {
		if status, err := p.renderWhy(ctx, &buf, ref, r.URL.Query().Get("token")); err != nil {
			plain(w, status, "status page: "+err.Error())
			return
		}
	} else {
		v, err := buildView(ctx, p.src, p.rec, &p.costs, p.now())
		if err != nil {
			p.log.ErrorContext(r.Context(), "status page could not read the fleet", "error", err)
			plain(w, http.StatusInternalServerError, "status page: "+err.Error())
			return
		}
		v.Token = r.URL.Query().Get("token")
		render(&buf, v, pageCSS, int(RefreshInterval/time.Second))
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// The URL may carry the token: never send it on as a Referer.
	h.Set("Referrer-Policy", "no-referrer")
	// Nothing but the inline style is ever loaded: the page works offline
	// and a stray injected tag can fetch nothing.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
