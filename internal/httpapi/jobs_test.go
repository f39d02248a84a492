package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

func TestListOpenJobsShowsOnlyOpenDemand(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := context.Background()
	a := f.queue(t, 20, "x64")
	f.queue(t, 21, "arm64")
	f.WaitStatus(a, runner.StatusRunning)
	// Job 20 starts on its runner: it is demand no more.
	ev := enginetest.Event(runner.ActionInProgress, 20, a)
	ev.Labels = []string{"self-hosted", "x64"}
	f.Deliver(ev)

	open, err := f.client.ListOpenJobs(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].ID != 21 || open[0].Pool != poolB || open[0].Status != runner.JobOpen || open[0].QueuedAt.IsZero() {
		t.Fatalf("open jobs = %+v, want only job 21 of %s, open, with its queued time", open, poolB)
	}
	ofA, err := f.client.ListOpenJobs(ctx, poolA)
	if err != nil || ofA == nil || len(ofA) != 0 {
		t.Errorf("open jobs of %s = %+v, %v; want an empty list", poolA, ofA, err)
	}
	status, _, hdr := enginetest.CallJSON(t, http.MethodPost, f.server.URL+httpapi.Prefix+"jobs", testToken)
	if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
		t.Errorf("POST jobs: %d Allow %q, want 405 Allow GET", status, hdr.Get("Allow"))
	}
	status, _, _ = enginetest.CallJSON(t, http.MethodGet, f.server.URL+httpapi.Prefix+"jobs", "")
	if status != http.StatusUnauthorized {
		t.Errorf("GET jobs without the token: %d, want 401", status)
	}
}

func TestListInstancesByStatus(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := context.Background()
	a := f.queue(t, 30, "x64")
	b := f.queue(t, 31, "arm64")
	f.WaitStatus(a, runner.StatusRunning)
	f.WaitStatus(b, runner.StatusRunning)
	if _, err := f.client.DeleteInstance(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(b, runner.StatusDeleted)

	running, err := f.client.ListInstancesWhere(ctx, httpapi.InstanceFilter{Statuses: []runner.Status{runner.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	// Job 31 is still queued, so the ledger may already be running a
	// replacement for the deleted instance (…-r2): that one is running too.
	names := instanceNames(running)
	if !names[a] || names[b] {
		t.Errorf("running instances = %v, want %s and not the deleted %s", names, a, b)
	}
	for name := range names {
		if name != a && !strings.HasPrefix(name, b+"-r") {
			t.Errorf("running instances = %v: %s is neither %s nor a replacement of %s", names, name, a, b)
		}
	}
	none, err := f.client.ListInstancesWhere(ctx, httpapi.InstanceFilter{Pool: poolA, Statuses: []runner.Status{runner.StatusError, runner.StatusCreating}})
	if err != nil || len(none) != 0 {
		t.Errorf("error or creating instances of %s = %v, %v; want none", poolA, instanceNames(none), err)
	}
	for _, bad := range []runner.Status{"runing", "Running"} {
		_, err := f.client.ListInstancesWhere(ctx, httpapi.InstanceFilter{Statuses: []runner.Status{bad}})
		var apiErr *httpapi.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, string(bad)) {
			t.Errorf("status=%s: %v, want a 400 naming it", bad, err)
		}
	}
}
