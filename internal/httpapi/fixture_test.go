package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

const (
	testToken = "s3cret-operator-token"
	poolA     = "linux-x64"
	poolB     = "arm64"
)

// fixture is the operator API over the test world, with two pools (one
// label each) and running workers; the API logs into the world's log.
type fixture struct {
	*enginetest.World
	server *httptest.Server
	client *httpapi.Client
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	return newFixtureWith(t, token, enginetest.Options{})
}

// newFixtureWith is newFixture with the world's options (its pools are
// always the fixture's two).
func newFixtureWith(t *testing.T, token string, o enginetest.Options) *fixture {
	t.Helper()
	pool := func(name, label string) runner.Pool {
		p := enginetest.OnePool(nil)[0]
		p.Name, p.Labels = name, []string{"self-hosted", label}
		return p
	}
	o.Pools = runner.Pools{pool(poolA, "x64"), pool(poolB, "arm64")}
	w := enginetest.NewWorld(t, o)
	w.StartWorkers(2)
	f := &fixture{World: w}
	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: w.Engine, Token: token, Logger: w.Logs.Logger(slog.LevelDebug)}))
	f.server = httptest.NewServer(mux)
	t.Cleanup(f.server.Close)
	client, err := httpapi.NewClient(f.server.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.client = client
	return f
}

// queue admits a queued job for label's pool and returns its instance name.
func (f *fixture) queue(t *testing.T, jobID int64, label string) string {
	t.Helper()
	ev := enginetest.Event(runner.ActionQueued, jobID, "")
	ev.Labels = []string{"self-hosted", label}
	out := f.Deliver(ev)
	if out.Result != engine.ResultCreated {
		t.Fatalf("queued job %d: result %q, want %q", jobID, out.Result, engine.ResultCreated)
	}
	return out.Instance
}
