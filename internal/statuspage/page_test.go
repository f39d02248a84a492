package statuspage

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

const pageToken = "page-test-token"

// fleet is a real engine over a real store with a one-runner pool, two
// jobs queued (one served by the only runner, one waiting for capacity),
// reporting to rec.
func fleet(t *testing.T) (*enginetest.World, *Recorder) {
	t.Helper()
	rec := NewRecorder(nil)
	w := enginetest.NewWorld(t, enginetest.Options{
		Pools:  enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = 1 }),
		Engine: func(o *engine.Options) { o.Observer = rec },
	})
	w.StartWorkers(1)
	w.Deliver(enginetest.Event(runner.ActionQueued, 101, ""))
	w.Deliver(enginetest.Event(runner.ActionQueued, 102, ""))
	w.WaitStatus(enginetest.InstanceName(101), runner.StatusRunning)
	w.Deliver(enginetest.Event(runner.ActionInProgress, 101, enginetest.InstanceName(101)))
	w.Drain()
	return w, rec
}

func get(h http.Handler, target, remote string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.RemoteAddr = remote
	for k, v := range header {
		req.Header[k] = v
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	return rr
}

func TestPageShowsPoolsInstancesJobsTransitionsAndTheChart(t *testing.T) {
	w, rec := fleet(t)
	h := New(Options{Source: w.Engine, Recorder: rec, Token: pageToken})
	rr := get(h, "/?token="+pageToken, "192.0.2.7:4242", nil)
	if rr.Code != http.StatusOK {
		t.Fatalf("GET /?token=…: %d %s", rr.Code, rr.Body)
	}
	body := rr.Body.String()
	for _, want := range []string{
		// One live runner of one allowed; job 102 waits for capacity.
		`data-pool="linux-x64" data-live="1" data-max="1" data-waiting="1"`,
		`data-instance="` + enginetest.InstanceName(101) + `" data-status="running"`,
		`data-job="102#1" data-status="open"`,
		`data-instance="` + enginetest.InstanceName(101) + `" data-from="creating" data-to="running"`,
		`id="queue-time-chart"`,
		`data-stage="started" data-count="1"`,
		`data-stage="created" data-count="1"`,
		`<circle class="point stage-started"`,
		`<meta http-equiv="refresh" content="5">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, `data-job="101#1"`) {
		t.Error("the served job 101 is listed as open")
	}
	// Nothing is loaded from anywhere: no src attribute, no script, and
	// the only links are the job rows' own why pages on this server.
	if !strings.Contains(body, `<a class="why" href="why/102?token=`+pageToken+`"`) {
		t.Error("job 102's row does not link to its why page")
	}
	if m := regexp.MustCompile(`(?i)<script|\ssrc=|\shref="(?:[a-z]+:|/)|@import|url\(`).FindString(body); m != "" {
		t.Errorf("page refers to an external asset or runs a script: %q", m)
	}
	if csp := rr.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if rp := rr.Header().Get("Referrer-Policy"); rp != "no-referrer" {
		t.Errorf("Referrer-Policy = %q: a token in the URL could leak", rp)
	}
}

func TestPageAsksForTheAPITokenWhenOneIsConfigured(t *testing.T) {
	w, rec := fleet(t)
	h := New(Options{Source: w.Engine, Recorder: rec, Token: pageToken})
	for _, tc := range []struct {
		name   string
		target string
		header http.Header
		want   int
	}{
		{"no token", "/", nil, http.StatusUnauthorized},
		{"wrong query token", "/?token=nope", nil, http.StatusUnauthorized},
		{"query token", "/?token=" + pageToken, nil, http.StatusOK},
		{"bearer header", "/", http.Header{"Authorization": {"Bearer " + pageToken}}, http.StatusOK},
		{"wrong bearer beats a right query", "/?token=" + pageToken, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"basic auth", "/", http.Header{"Authorization": {"Basic " + pageToken}}, http.StatusUnauthorized},
		// A token is needed even from this machine.
		{"loopback without token", "/", nil, http.StatusUnauthorized},
	} {
		remote := "198.51.100.3:5000"
		if strings.HasPrefix(tc.name, "loopback") {
			remote = "127.0.0.1:5000"
		}
		rr := get(h, tc.target, remote, tc.header)
		if rr.Code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, rr.Code, rr.Body, tc.want)
		}
		if rr.Code != http.StatusOK && strings.Contains(rr.Body.String(), pageToken) {
			t.Errorf("%s: the refusal echoes the token", tc.name)
		}
	}
}

func TestPageWithoutATokenIsForLoopbackClientsOnly(t *testing.T) {
	w, rec := fleet(t)
	h := New(Options{Source: w.Engine, Recorder: rec})
	for remote, want := range map[string]int{
		"127.0.0.1:5000":    http.StatusOK,
		"[::1]:5000":        http.StatusOK,
		"10.0.0.8:5000":     http.StatusForbidden,
		"[2001:db8::1]:443": http.StatusForbidden,
	} {
		if rr := get(h, "/", remote, nil); rr.Code != want {
			t.Errorf("from %s: %d %q, want %d", remote, rr.Code, rr.Body, want)
		}
	}
}

func TestPageIsReadOnly(t *testing.T) {
	h := New(Options{Source: nil, Token: pageToken})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req := httptest.NewRequest(method, "/?token="+pageToken, nil)
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		if rr.Code != http.StatusMethodNotAllowed || rr.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /: %d, Allow %q; want 405 with Allow: GET, HEAD", method, rr.Code, rr.Header().Get("Allow"))
		}
	}
}

func TestChartPlacesSamplesByTimeAndWait(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	c := newChart([]Sample{
		{At: at.Add(-SampleWindow), Pool: "p", Stage: engine.StageCreated, Waited: 0},
		{At: at, Pool: "p", Stage: engine.StageStarted, Waited: 10 * time.Second},
	}, at)
	left, right := float64(c.PlotLeft), float64(c.PlotLeft+c.PlotWidth)
	bottom, top := float64(c.PlotTop+c.PlotHeight), float64(c.PlotTop)
	if p := c.Points[0]; p.X != left || p.Y != bottom {
		t.Errorf("oldest, shortest sample at (%v,%v), want the bottom left (%v,%v)", p.X, p.Y, left, bottom)
	}
	if p := c.Points[1]; p.X != right || p.Y != top {
		t.Errorf("newest, longest sample at (%v,%v), want the top right (%v,%v)", p.X, p.Y, right, top)
	}
	if got := c.YTicks[len(c.YTicks)-1].Label; got != "10s" {
		t.Errorf("the y axis tops at %q, want 10s (the longest wait, a round scale)", got)
	}
}
