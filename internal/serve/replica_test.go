package serve

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/testlog"
)

func TestReconcilerLeaseTTLIsAFewIntervalsWithinBounds(t *testing.T) {
	for _, c := range []struct{ interval, want time.Duration }{
		{30 * time.Second, 90 * time.Second},
		{time.Second, 3 * time.Second},
		{10 * time.Millisecond, 3 * time.Second},
		{time.Hour, 3 * time.Minute},
	} {
		if got := reconcilerLeaseTTL(c.interval); got != c.want {
			t.Errorf("reconcilerLeaseTTL(%s) = %s, want %s", c.interval, got, c.want)
		}
	}
}

// A store one process owns has no replicas: no holder, no lease; a shared
// one names this process.
func TestReplicaOnlyOnASharedStore(t *testing.T) {
	if r := newReplica(&state{soleOwner: true}); r != nil {
		t.Errorf("bolt: replica %+v, want none", r)
	}
	if r := newReplica(&state{soleOwner: false}); r == nil || r.holder == "" {
		t.Errorf("postgres: replica %+v, want a holder id", r)
	}
}

func TestWarnsOfProcessLocalSimulationsOnASharedStore(t *testing.T) {
	cfg := &config.Config{GitHub: config.GitHub{Simulated: true},
		Pools: []config.Pool{{Name: "sim", Provider: config.Provider{Type: "simulated"}}, {Name: "real", Provider: config.Provider{Type: "external"}}}}
	var logs testlog.Buffer
	warnProcessLocal(cfg, &replica{holder: "h"}, slog.New(slog.NewTextHandler(&logs, nil)))
	out := logs.String()
	if !strings.Contains(out, "github.simulated") || !strings.Contains(out, "pools[sim]") || strings.Contains(out, "pools[real]") {
		t.Errorf("warning: %s", out)
	}
	var alone testlog.Buffer
	warnProcessLocal(cfg, nil, slog.New(slog.NewTextHandler(&alone, nil)))
	if alone.String() != "" {
		t.Errorf("one process on its own store warned: %s", alone.String())
	}
}
