package serve_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/serve"
)

// testPEM is only shaped like a key: the config checks the PEM framing.
const testPEM = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	env := func(name string) (string, bool) {
		if name == "KEY" {
			return testPEM, true
		}
		return "secret", true
	}
	cfg, err := config.Parse([]byte(yaml), env, nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func baseConfig(dir, github string) string {
	return `
controller_id: ctl
github: ` + github + `
webhook: {secret_env: SECRET}
store: {dir: ` + dir + `}
pools:
  - name: p
    owner: octo-org
    labels: [x]
    max_runners: 1
    provider: {type: simulated}
`
}

func TestRunRefusesASecondServerOnTheSameStore(t *testing.T) {
	dir := t.TempDir()
	cfg := parseConfig(t, baseConfig(dir, "{simulated: true}"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Listener: ln, Logger: slog.New(slog.DiscardHandler)})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first Run: %v", err)
		}
	}()
	waitHealthy(t, "http://"+ln.Addr().String())

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = serve.Run(context.Background(), serve.Options{Config: cfg, Listener: ln2, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "another runfleet") {
		t.Errorf("second Run on the same store.dir = %v, want a refusal naming the cause", err)
	}
	// The refused server released its listener.
	if _, err := net.Dial("tcp", ln2.Addr().String()); err == nil {
		t.Error("the refused server's listener is still open")
	}
}

// waitHealthy waits for /healthz to answer 200: the listener is bound
// before Run starts, so only an answer proves Run holds the store.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	enginetest.Eventually(t, "the server to answer /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
