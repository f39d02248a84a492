package serve_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/testlog"
)

// scaleSetConfig is baseConfig with its pool fed by a scale set.
func scaleSetConfig(dir, github string) string {
	return strings.Replace(baseConfig(dir, github), "    max_runners: 1\n", "    max_runners: 1\n    scale_set: {name: linux-scale}\n", 1)
}

// serve starts a listener for a scale-set pool. GitHub unreachable, it
// waits and retries — serve stays up, nothing crashes — and it stops with
// serve.
func TestServeRunsAListenerPerScaleSetPool(t *testing.T) {
	cfg := parseConfig(t, scaleSetConfig(t.TempDir(), "{token_env: TOKEN, base_url: 'http://127.0.0.1:1/api/v3'}"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Listener: ln, Logger: logs.Logger(slog.LevelDebug)})
	}()
	waitHealthy(t, "http://"+ln.Addr().String())
	enginetest.Eventually(t, "the listener to try for a session", func() bool {
		return len(logs.WithMessage(t, "no message session")) > 0
	}, logs.String)
	// /metrics shows the listener's series for its pool from the start: no
	// poll answered, and the last-poll clock at the listener's start, so
	// that a listener never answered fires ListenerNotPollingAlarm.
	families := scrape(t, "http://"+ln.Addr().String()+"/metrics", "")
	pool := map[string]string{"pool": "p"}
	for _, name := range []string{metrics.ListenerPolls, metrics.ListenerSessionConflicts} {
		if v, ok := sample(families, name, pool); !ok || v != 0 {
			t.Errorf("%s{pool=p} = %v (present %t), want present at 0", name, v, ok)
		}
	}
	if v, ok := sample(families, metrics.ListenerLastPoll, pool); !ok || v < float64(started.Unix()) {
		t.Errorf("%s{pool=p} = %v (present %t), want the listener's start, after %d", metrics.ListenerLastPoll, v, ok, started.Unix())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	line := logs.WithMessage(t, "no message session")[0]
	if line["pool"] != "p" || line["scale_set"] != "linux-scale" {
		t.Errorf("the listener's log line %v does not name its pool and scale set", line)
	}
}

// A scale-set pool needs GitHub itself: with the simulated GitHub serve
// refuses to start, naming the field.
func TestServeRefusesAScaleSetPoolOnTheSimulatedGitHub(t *testing.T) {
	cfg := parseConfig(t, scaleSetConfig(t.TempDir(), "{simulated: true}"))
	err := serve.Run(context.Background(), serve.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "pools[0].scale_set") {
		t.Fatalf("Run = %v, want a refusal naming pools[0].scale_set", err)
	}
}
