package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// GET /metrics counts live instances by pool and status in Prometheus'
// text format.
func TestMetricsCountLiveInstances(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, func(string) string { return baseConfig(dir, "{simulated: true}") })
	body, _ := json.Marshal(webhook.WorkflowJobEvent{
		Action:       string(runner.ActionQueued),
		WorkflowJob:  webhook.WorkflowJob{ID: 7, RunAttempt: 1, Labels: []string{"x"}},
		Repository:   &webhook.Repository{FullName: "octo-org/hello"},
		Organization: &webhook.Account{Login: "octo-org"},
	})
	if res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("secret"), "workflow_job", body, ""); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("queued webhook: %v %+v", err, res)
	}
	want := `runfleet_instances{pool="p",status="running"} 1`
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Fatalf("content type %q", ct)
		}
		if strings.Contains(string(text), want) && strings.Contains(string(text), "runfleet_dead_letters 0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %q:\n%s", want, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
