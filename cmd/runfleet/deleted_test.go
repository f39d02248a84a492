package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/store"
)

// portOnly is a store seen only through store.Store, as a DynamoDB store
// is: the bolt store's ability to list deleted instances is hidden.
type portOnly struct{ store.Store }

// Against a server whose store cannot list deleted instances, --all fails
// with the server's reason, said once, and the way to read one instead;
// a plain listing still works.
func TestListAllWhenTheServerCannotListDeleted(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{WrapStore: func(s store.Store) store.Store { return portOnly{s} }})
	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: w.Engine, Token: testAPIToken, Logger: w.Logs.Logger(slog.LevelInfo)}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	env := map[string]string{"RUNFLEET_SERVER": srv.URL, "RUNFLEET_API_TOKEN": testAPIToken}

	for _, args := range [][]string{{"instances", "list", "--all"}, {"instances", "list", "--status", "deleted"}} {
		res := runCLI(t, env, args...)
		if res.code != exitFailure || !strings.Contains(res.stderr, "runfleet instances show NAME") {
			t.Errorf("runfleet %s: %+v; want a failure pointing at instances show", strings.Join(args, " "), res)
		}
		assertSaidOnce(t, res.stderr, "cannot list deleted instances", "501")
	}
	if res := runCLI(t, env, "instances", "list"); res.code != exitOK || strings.TrimSpace(res.stdout) != "no live instances" {
		t.Errorf("instances list: %+v", res)
	}
}
