package githubtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// Deliver logs every attempt as GitHub does, whatever became of it, and
// keeps the GUID a caller resends under.
func TestDeliverLogsEachAttempt(t *testing.T) {
	srv := githubtest.NewServer(t)
	srv.AddOrg("octo-org")
	srv.AddJob(githubtest.Job{ID: 5, Repo: "octo-org/app", Labels: []string{"self-hosted"}})
	body, err := srv.WorkflowJobWebhook(5, githubtest.JobQueued, "", 77)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusAccepted)
		case "/slow":
			<-release
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer endpoint.Close()
	defer close(release)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	client := &http.Client{Timeout: 200 * time.Millisecond}
	attempts := []struct {
		url        string
		redelivery bool
		status     string
		code       int
		sent       bool
	}{
		{closedURL, false, "failed to connect", http.StatusBadGateway, false},
		{endpoint.URL + "/slow", true, "timed out", 0, true},
		{endpoint.URL + "/down", true, "Invalid HTTP Response: 503", 503, true},
		{endpoint.URL + "/ok", true, "OK", 202, true},
	}
	for i, a := range attempts {
		req, err := githubtest.WebhookRequest(a.url, []byte("s"), "workflow_job", "guid-1", body)
		if err != nil {
			t.Fatal(err)
		}
		d, err := srv.Deliver(client, req, a.redelivery)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if d.Status != a.status || d.StatusCode != a.code || d.Sent != a.sent || d.GUID != "guid-1" ||
			d.Action != githubtest.JobQueued || d.InstallationID != 77 || d.RepositoryID == 0 || d.Redelivery != a.redelivery {
			t.Errorf("attempt %d logged %+v; want status %q (%d), sent %v", i, d, a.status, a.code, a.sent)
		}
		if d.Delivered() != (i == 3) || d.Answered() != (i >= 2) {
			t.Errorf("attempt %d: delivered %v, answered %v", i, d.Delivered(), d.Answered())
		}
	}
	log := srv.Deliveries()
	if len(log) != len(attempts) {
		t.Fatalf("%d attempts logged, want %d", len(log), len(attempts))
	}
	for i := 1; i < len(log); i++ {
		if log[i].ID <= log[i-1].ID {
			t.Errorf("log out of id order at %d: %d after %d", i, log[i].ID, log[i-1].ID)
		}
	}

	// A cancelled attempt is the caller stopping: not logged.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := githubtest.WebhookRequest(endpoint.URL+"/ok", []byte("s"), "workflow_job", "guid-2", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Deliver(client, req.WithContext(ctx), false); err == nil {
		t.Error("a cancelled attempt: no error")
	}
	if n := len(srv.Deliveries()); n != len(attempts) {
		t.Errorf("a cancelled attempt was logged: %d entries", n)
	}
}
