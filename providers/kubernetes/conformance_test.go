package kubernetes_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external/conformance"
)

// The provider passes the same conformance suite `runfleet provider check`
// runs on any provider, against the real API server.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t, "ctl", "linux", nil)
	r := conformance.Run(context.Background(), p, conformance.Options{
		Pool: "linux", PoolID: runner.PoolID("ctl", "linux"),
		Template: providers.CreateRequest{
			MetadataURL: "http://runfleet.runfleet.svc:8080/metadata/x", CallbackURL: "http://runfleet.runfleet.svc:8080/callbacks/x",
			InstanceToken: "token", Labels: []string{"self-hosted", "linux"},
		},
		Settle: 2 * time.Second, PollInterval: 50 * time.Millisecond,
	})
	for _, res := range r.Results {
		t.Logf("%s %s: %s", res.Status, res.Check, res.Detail)
	}
	if !r.OK() || r.Count(conformance.Warn) != 0 {
		t.Fatalf("conformance: %d failed, %d warned, %d skipped, leftovers %v", r.Count(conformance.Fail), r.Count(conformance.Warn), r.Count(conformance.Skip), r.Leftovers)
	}
	if pods, secrets := e.pods(t), e.secrets(t); len(pods)+len(secrets) != 0 {
		t.Fatalf("the suite left %d pods and %d secrets", len(pods), len(secrets))
	}
}
