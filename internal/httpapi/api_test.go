package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

func TestAPIDisabledWithoutToken(t *testing.T) {
	f := newFixture(t, "")
	for _, path := range []string{"instances", "instances/x", "reconcile", "nope"} {
		status, body, _ := enginetest.CallJSON(t, http.MethodGet, f.server.URL+httpapi.Prefix+path, "anything")
		if status != http.StatusNotFound || body["error"] != httpapi.DisabledMessage || body["status"] != float64(404) {
			t.Errorf("GET %s: %d %v; want 404 with the disabled message", path, status, body)
		}
	}
}

func TestAPIRefusesMissingOrWrongToken(t *testing.T) {
	f := newFixture(t, testToken)
	name := f.queue(t, 1, "x64")
	cases := map[string]string{
		"missing":      "",
		"wrong":        "not-the-token",
		"prefix":       testToken[:5],
		"longer":       testToken + "x",
		"other scheme": "",
	}
	for what, token := range cases {
		t.Run(what, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodDelete, f.server.URL+httpapi.Prefix+"instances/"+name+"?force=true", nil)
			switch {
			case what == "other scheme":
				req.Header.Set("Authorization", "Basic "+testToken)
			case token != "":
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body httpapi.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusUnauthorized || body.Status != 401 || body.Error == "" {
				t.Errorf("got %d %+v, want 401 with a reason", resp.StatusCode, body)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	logs := f.Logs.String()
	if n := strings.Count(logs, "operator API request refused"); n != len(cases) {
		t.Errorf("%d refusal log lines, want %d:\n%s", n, len(cases), logs)
	}
	if strings.Contains(logs, "not-the-token") || strings.Contains(logs, testToken) {
		t.Errorf("a presented or configured token was logged:\n%s", logs)
	}
	// None of the refused deletes happened.
	inst, err := f.Engine.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status.PendingDeletion() || !inst.Status.Live() {
		t.Errorf("a refused request changed the instance: status %s", inst.Status)
	}
}

func TestListAndShowInstances(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := context.Background()
	a := f.queue(t, 10, "x64")
	b := f.queue(t, 11, "arm64")
	f.WaitStatus(a, runner.StatusRunning)

	all, err := f.client.ListInstances(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if names := instanceNames(all); len(names) != 2 || !names[a] || !names[b] {
		t.Errorf("list = %v, want %s and %s", names, a, b)
	}
	onlyB, err := f.client.ListInstances(ctx, poolB)
	if err != nil {
		t.Fatal(err)
	}
	if names := instanceNames(onlyB); len(names) != 1 || !names[b] {
		t.Errorf("list ?pool=%s = %v, want only %s", poolB, names, b)
	}
	none, err := f.client.ListInstances(ctx, "no-such-pool")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("list of an unknown pool = %v, %v; want an empty list", none, err)
	}

	got, err := f.client.GetInstance(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != a || got.Pool != poolA || got.Status != runner.StatusRunning || got.GitHubRunnerID == 0 {
		t.Errorf("show %s = %+v", a, got)
	}

	_, err = f.client.GetInstance(ctx, "runfleet-nope-1-1")
	var apiErr *httpapi.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, "runfleet-nope-1-1") {
		t.Errorf("show unknown: %v, want a 404 naming the instance", err)
	}
}

func instanceNames(list []*runner.Instance) map[string]bool {
	m := map[string]bool{}
	for _, i := range list {
		m[i.Name] = true
	}
	return m
}

func TestDeleteBusyRunnerNeedsForce(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := context.Background()
	name := f.queue(t, 20, "x64")
	f.WaitStatus(name, runner.StatusRunning)
	if !f.GitHub.SetBusy(name, true) {
		t.Fatalf("simulated GitHub has no runner %s", name)
	}

	_, err := f.client.DeleteInstance(ctx, name, false)
	var apiErr *httpapi.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || !strings.Contains(apiErr.Message, "force") {
		t.Fatalf("delete of a busy runner: %v, want 409 mentioning force", err)
	}
	if inst, err := f.Engine.GetInstance(ctx, name); err != nil || inst.Status != runner.StatusRunning {
		t.Fatalf("refused delete changed the instance: %+v, %v", inst, err)
	}

	status, body, _ := enginetest.CallJSON(t, http.MethodDelete, f.server.URL+httpapi.Prefix+"instances/"+name+"?force=true", testToken)
	if status != http.StatusAccepted {
		t.Fatalf("forced delete: %d %v, want 202", status, body)
	}
	if body["name"] != name || body["status"] != string(runner.StatusPendingForceDelete) {
		t.Errorf("forced delete answered %v, want the instance in pending_force_delete", body)
	}
	f.WaitStatus(name, runner.StatusDeleted)

	// Deleting what is already deleted is not an error: 200 with the record.
	inst, err := f.client.DeleteInstance(ctx, name, true)
	if err != nil || inst.Status != runner.StatusDeleted {
		t.Errorf("second delete: %+v, %v; want the deleted instance", inst, err)
	}
}

func TestDeleteUnknownAndBadForce(t *testing.T) {
	f := newFixture(t, testToken)
	status, body, _ := enginetest.CallJSON(t, http.MethodDelete, f.server.URL+httpapi.Prefix+"instances/runfleet-x-1-1", testToken)
	if status != http.StatusNotFound || body["status"] != float64(404) {
		t.Errorf("delete unknown: %d %v, want 404", status, body)
	}
	name := f.queue(t, 30, "x64")
	status, body, _ = enginetest.CallJSON(t, http.MethodDelete, f.server.URL+httpapi.Prefix+"instances/"+name+"?force=maybe", testToken)
	if status != http.StatusBadRequest {
		t.Errorf("force=maybe: %d %v, want 400", status, body)
	}
	if inst, err := f.Engine.GetInstance(context.Background(), name); err != nil || inst.Status.PendingDeletion() {
		t.Errorf("a bad request changed the instance: %+v, %v", inst, err)
	}
}

func TestOrdinaryDeleteOfIdleRunner(t *testing.T) {
	f := newFixture(t, testToken)
	name := f.queue(t, 40, "arm64")
	f.WaitStatus(name, runner.StatusRunning)
	inst, err := f.client.DeleteInstance(context.Background(), name, false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusPendingDelete {
		t.Errorf("delete answered status %s, want pending_delete", inst.Status)
	}
	f.WaitStatus(name, runner.StatusDeleted)
}

func TestReconcile(t *testing.T) {
	f := newFixture(t, testToken)
	name := f.queue(t, 50, "x64")
	f.WaitStatus(name, runner.StatusRunning)
	res, err := f.client.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Examined != 1 {
		t.Errorf("reconcile examined %d instances, want 1", res.Report.Examined)
	}
	status, body, _ := enginetest.CallJSON(t, http.MethodPost, f.server.URL+httpapi.Prefix+"reconcile", testToken)
	if status != http.StatusOK || body["report"] == nil {
		t.Errorf("POST reconcile: %d %v", status, body)
	}
}

func TestWrongMethodsAndRoutes(t *testing.T) {
	f := newFixture(t, testToken)
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPost, "instances", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPut, "instances/x", http.StatusMethodNotAllowed, "GET, DELETE"},
		{http.MethodGet, "reconcile", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "pools", http.StatusNotFound, ""},
	}
	for _, c := range cases {
		status, body, hdr := enginetest.CallJSON(t, c.method, f.server.URL+httpapi.Prefix+c.path, testToken)
		if status != c.status || body["status"] != float64(c.status) || body["error"] == "" {
			t.Errorf("%s %s: %d %v, want %d with a JSON error", c.method, c.path, status, body, c.status)
		}
		if hdr.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, hdr.Get("Allow"), c.allow)
		}
	}
}

func TestClientReportsUnreachableServer(t *testing.T) {
	c, err := httpapi.NewClient("http://127.0.0.1:1", testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListInstances(context.Background(), "")
	var apiErr *httpapi.Error
	if err == nil || errors.As(err, &apiErr) || !strings.Contains(err.Error(), "cannot reach runfleet") {
		t.Errorf("got %v, want a cannot-reach error", err)
	}
	if _, err := httpapi.NewClient("127.0.0.1:8080", "", nil); err == nil {
		t.Error("NewClient accepted a URL without a scheme")
	}
}
