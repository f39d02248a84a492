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
	"github.com/runfleet/runfleet/internal/store"
)

// Asked for, the deleted instances the store keeps are listed after the
// live ones, and the pool and status filters apply to them too.
func TestListIncludesDeletedWhenAsked(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := context.Background()
	a := f.queue(t, 50, "x64")
	b := f.queue(t, 51, "arm64")
	f.WaitStatus(a, runner.StatusRunning)
	f.WaitStatus(b, runner.StatusRunning)
	if _, err := f.client.DeleteInstance(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(b, runner.StatusDeleted)

	list := func(filter httpapi.InstanceFilter) []*runner.Instance {
		t.Helper()
		got, err := f.client.ListInstancesWhere(ctx, filter)
		if err != nil {
			t.Fatalf("%+v: %v", filter, err)
		}
		return got
	}
	if names := instanceNames(list(httpapi.InstanceFilter{})); names[b] {
		t.Errorf("default list holds the deleted %s: %v", b, names)
	}

	all := list(httpapi.InstanceFilter{Deleted: true})
	if names := instanceNames(all); !names[a] || !names[b] {
		t.Errorf("deleted=true: %v, want %s and the deleted %s", names, a, b)
	}
	if last := all[len(all)-1]; last.Name != b || last.Status != runner.StatusDeleted {
		t.Errorf("deleted=true: last is %s (%s), want the deleted %s after the live ones", last.Name, last.Status, b)
	}

	onlyDeleted := list(httpapi.InstanceFilter{Statuses: []runner.Status{runner.StatusDeleted}})
	if len(onlyDeleted) != 1 || onlyDeleted[0].Name != b {
		t.Errorf("status=deleted: %v, want only %s", instanceNames(onlyDeleted), b)
	}
	if got := list(httpapi.InstanceFilter{Pool: poolA, Deleted: true}); instanceNames(got)[b] || !instanceNames(got)[a] {
		t.Errorf("pool=%s&deleted=true: %v, want %s and not %s of %s", poolA, instanceNames(got), a, b, poolB)
	}
	if got := list(httpapi.InstanceFilter{Pool: poolA, Statuses: []runner.Status{runner.StatusDeleted}}); len(got) != 0 {
		t.Errorf("pool=%s&status=deleted: %v, want none", poolA, instanceNames(got))
	}
	if got := list(httpapi.InstanceFilter{Statuses: []runner.Status{runner.StatusRunning}, Deleted: true}); instanceNames(got)[b] || !instanceNames(got)[a] {
		t.Errorf("status=running&deleted=true: %v, want %s and no deleted instance", instanceNames(got), a)
	}

	for query, want := range map[string]string{
		"deleted=maybe":                `deleted="maybe"`,
		"status=deleted&deleted=false": "status=deleted with deleted=false",
	} {
		status, body, _ := enginetest.CallJSON(t, http.MethodGet, f.server.URL+httpapi.Prefix+"instances?"+query, testToken)
		if msg, _ := body["error"].(string); status != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("?%s: %d %v, want 400 saying %q", query, status, body, want)
		}
	}
}

// portOnly is a store seen only through store.Store, as a DynamoDB store
// is: the bolt store's ability to list deleted instances is hidden.
type portOnly struct{ store.Store }

// A store that cannot list deleted instances makes the API say so (501,
// and what to do instead) and changes nothing else: live listing works.
func TestListDeletedWithoutTheStoreAbilityIs501(t *testing.T) {
	f := newFixtureWith(t, testToken, enginetest.Options{WrapStore: func(s store.Store) store.Store { return portOnly{s} }})
	ctx := context.Background()
	a := f.queue(t, 60, "x64")

	for _, filter := range []httpapi.InstanceFilter{{Deleted: true}, {Statuses: []runner.Status{runner.StatusDeleted}}} {
		_, err := f.client.ListInstancesWhere(ctx, filter)
		var apiErr *httpapi.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented || !strings.Contains(apiErr.Message, "instances/{name}") {
			t.Errorf("%+v: %v, want a 501 pointing at reading one by name", filter, err)
		}
	}
	if live, err := f.client.ListInstancesWhere(ctx, httpapi.InstanceFilter{}); err != nil || !instanceNames(live)[a] {
		t.Errorf("live list over the same store: %v, %v; want %s", live, err, a)
	}
	if lines := f.Logs.Lines(t, map[string]any{"msg": "operator API request", "status": http.StatusNotImplemented}); len(lines) != 2 {
		t.Errorf("%d request lines with status 501, want 2", len(lines))
	}
	if failed := f.Logs.WithMessage(t, "operator API request failed"); len(failed) != 0 {
		t.Errorf("a 501 was logged as a server failure: %v", failed)
	}
}
