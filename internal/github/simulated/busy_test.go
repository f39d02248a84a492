package simulated_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/simulated"
)

func TestBusyLabelRegistersABusyRunner(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	req := jit(org, "runfleet-busy-demo-1-1")
	req.Labels = append(req.Labels, "Simulated-Busy") // labels match in any case, as GitHub's do
	cfg, err := g.GenerateJITConfig(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain := register(t, g, org, "runfleet-plain-1-1")

	runners, err := g.ListRunners(ctx, org)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runners {
		wantBusy := r.ID == cfg.RunnerID
		if r.Busy != wantBusy || (wantBusy && r.Status != simulated.StatusOnline) {
			t.Errorf("runner %s: busy %t, status %s; want busy %t (online when busy)", r.Name, r.Busy, r.Status, wantBusy)
		}
	}
	err = g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: cfg.RunnerID})
	if !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("removing the busy runner: %v, want ErrRunnerBusy", err)
	}
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: plain.RunnerID}); err != nil {
		t.Errorf("removing the plain runner: %v", err)
	}
	// Its job "ends": the runner can go.
	g.SetBusy("runfleet-busy-demo-1-1", false)
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: cfg.RunnerID}); err != nil {
		t.Errorf("removing the runner once idle: %v", err)
	}
}
