package statuspage

import (
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// The why page a job row links to answers first, as runfleet why does,
// and is authorised like the page.
func TestWhyPageAnswersFirst(t *testing.T) {
	w, rec := fleet(t)
	mux := http.NewServeMux()
	h := New(Options{Source: w.Engine, Recorder: rec, Token: pageToken})
	mux.Handle("/{$}", h)
	mux.Handle("/why/{job}", h)
	rr := get(mux, "/why/102?token="+pageToken, "192.0.2.7:4242", nil)
	if rr.Code != http.StatusOK {
		t.Fatalf("GET /why/102: %d %s", rr.Code, rr.Body)
	}
	body := rr.Body.String()
	for _, want := range []string{`data-reason="capacity"`, "waits for capacity: pool linux-x64 at max_runners 1/1",
		`href="../?token=` + pageToken + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("why page lacks %s:\n%s", want, body)
		}
	}
	if rr := get(mux, "/why/102", "192.0.2.7:4242", nil); rr.Code != http.StatusUnauthorized {
		t.Errorf("why page without the token: %d", rr.Code)
	}
	if rr := get(mux, "/why/nonsense?token="+pageToken, "192.0.2.7:4242", nil); rr.Code != http.StatusBadRequest {
		t.Errorf("why page of no job: %d", rr.Code)
	}
}

// A job no pool matches is listed with its reason.
func TestPageListsAJobNoPoolMatches(t *testing.T) {
	w, rec := fleet(t)
	ev := enginetest.Event(runner.ActionQueued, 103, "")
	ev.Labels = []string{"self-hosted", "linux", "x46"}
	w.Deliver(ev)
	rr := get(New(Options{Source: w.Engine, Recorder: rec, Token: pageToken}), "/?token="+pageToken, "192.0.2.7:4242", nil)
	body := rr.Body.String()
	for _, want := range []string{`data-job="103#1" data-status="unmatched"`, "unmatched: no pool has all of the labels", "lacks x46",
		`data-pool="linux-x64" data-live="1" data-max="1" data-waiting="1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}
