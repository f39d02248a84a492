package rest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/rest"
)

// With no installation id from the event or the config (the reconciler's
// calls), the client asks GitHub, as the App, which installation covers the
// owner — once per owner.
func TestInstallationIsLookedUpOncePerOwner(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v3/orgs/octo-org/installation" && strings.HasPrefix(auth, "Bearer "):
			fmt.Fprint(w, `{"id": 555, "app_id": 4242, "account": {"login": "octo-org"}, "target_type": "Organization"}`)
		case r.URL.Path == "/api/v3/orgs/elsewhere/installation":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message": "Not Found"}`)
		case r.URL.Path == "/api/v3/app/installations/555/access_tokens" && strings.HasPrefix(auth, "Bearer "):
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token": "ghs_test", "expires_at": %q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		case r.URL.Path == "/api/v3/orgs/octo-org/actions/runners" && auth == "token ghs_test":
			fmt.Fprint(w, `{"total_count": 0, "runners": []}`)
		default:
			t.Errorf("unexpected %s %s (auth %q)", r.Method, r.URL.Path, auth)
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	c, err := rest.New(rest.Options{BaseURL: srv.URL, AppID: testAppID, PrivateKey: appKey().PrivateKeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.ListRunners(context.Background(), github.Owner{Org: "octo-org"}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"GET /api/v3/orgs/octo-org/installation",
		"POST /api/v3/app/installations/555/access_tokens",
		"GET /api/v3/orgs/octo-org/actions/runners",
		"GET /api/v3/orgs/octo-org/actions/runners",
	}
	mu.Lock()
	got := strings.Join(paths, "\n")
	mu.Unlock()
	if got != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if calls := c.Calls(); calls.ByOperation[rest.OpFindInstallation] != 1 || calls.API() != 2 {
		t.Errorf("calls %+v", calls)
	}
	_, err = c.ListRunners(context.Background(), github.Owner{Org: "elsewhere"})
	if !errors.Is(err, rest.ErrNoInstallation) || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("err = %v, want ErrNoInstallation", err)
	}
}
