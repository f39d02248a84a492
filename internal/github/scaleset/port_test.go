package scaleset_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// restStandIn records what reaches the REST port behind the router.
type restStandIn struct {
	github.GitHub
	jit, removed []string
}

func (r *restStandIn) GenerateJITConfig(_ context.Context, req github.JITRequest) (*github.JITConfig, error) {
	r.jit = append(r.jit, req.Name)
	return &github.JITConfig{RunnerID: 1, EncodedJITConfig: "rest"}, nil
}

func (r *restStandIn) RemoveRunner(_ context.Context, ref github.RunnerRef) error {
	r.removed = append(r.removed, ref.Name)
	return nil
}

// A scale-set pool's runners are registered and removed through its scale
// set, with the engine's port contract: a taken name of an idle runner is
// cleared, gone is success, busy is github.ErrRunnerBusy. Other pools'
// runners go to the REST port.
func TestScaleSetPoolRunnersGoThroughTheScaleSet(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	rest := &restStandIn{}
	gh := scaleset.RoutedGitHub{GitHub: rest, ByPool: map[string]scaleset.PoolRunners{
		"scale": &scaleset.Runners{Client: w.client, Name: "linux"},
	}}
	owner := w.fake.Owner()

	jit, err := gh.GenerateJITConfig(w.ctx, github.JITRequest{Owner: owner, Name: "r-1", Pool: "scale"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.client.RunnerByName(w.ctx, "r-1"); err != nil || r.ID != jit.RunnerID || r.ScaleSetID != set.ID {
		t.Fatalf("runner %+v, %v: want r-1 in scale set %d with id %d", r, err, set.ID, jit.RunnerID)
	}
	again, err := gh.GenerateJITConfig(w.ctx, github.JITRequest{Owner: owner, Name: "r-1", Pool: "scale"})
	if err != nil || again.RunnerID == jit.RunnerID {
		t.Fatalf("a retried registration of an idle name: %+v, %v; want a new runner", again, err)
	}

	w.fake.SetRunnerBusy(again.RunnerID, true)
	err = gh.RemoveRunner(w.ctx, github.RunnerRef{Owner: owner, ID: again.RunnerID, Pool: "scale"})
	if !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("removing a busy runner: %v, want github.ErrRunnerBusy", err)
	}
	if _, err := gh.GenerateJITConfig(w.ctx, github.JITRequest{Owner: owner, Name: "r-1", Pool: "scale"}); !errors.Is(err, github.ErrRunnerNameTaken) {
		t.Fatalf("registering over a busy runner: %v, want github.ErrRunnerNameTaken", err)
	}
	w.fake.SetRunnerBusy(again.RunnerID, false)
	if err := gh.RemoveRunner(w.ctx, github.RunnerRef{Owner: owner, Name: "r-1", Pool: "scale"}); err != nil {
		t.Fatalf("removing by name: %v", err)
	}
	if err := gh.RemoveRunner(w.ctx, github.RunnerRef{Owner: owner, ID: again.RunnerID, Pool: "scale"}); err != nil {
		t.Fatalf("removing a runner already gone: %v, want success", err)
	}

	if _, err := gh.GenerateJITConfig(w.ctx, github.JITRequest{Owner: owner, Name: "w-1", Pool: "hooks"}); err != nil {
		t.Fatal(err)
	}
	_ = gh.RemoveRunner(w.ctx, github.RunnerRef{Owner: owner, Name: "w-1", Pool: "hooks"})
	_ = gh.RemoveRunner(w.ctx, github.RunnerRef{Owner: owner, Name: "orphan"})
	if len(rest.jit) != 1 || len(rest.removed) != 2 {
		t.Fatalf("REST port got JIT %v, removals %v; want the webhook pool's and the orphan's only", rest.jit, rest.removed)
	}
}

// GitHub deleted the scale set: the runners' lookup forgets it and finds
// the new one once the listener has ensured it again.
func TestScaleSetRunnersFollowARecreatedScaleSet(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	old := w.scaleSet(t, "linux")
	r := &scaleset.Runners{Client: w.client, Name: "linux"}
	req := github.JITRequest{Owner: w.fake.Owner(), Name: "r-1"}
	if _, err := r.GenerateJITConfig(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	w.fake.DeleteScaleSetServerSide(old.ID)
	req.Name = "r-2"
	if _, err := r.GenerateJITConfig(w.ctx, req); !errors.Is(err, scaleset.ErrScaleSetNotFound) {
		t.Fatalf("after the delete: %v, want ErrScaleSetNotFound", err)
	}
	fresh := w.scaleSet(t, "linux")
	jit, err := r.GenerateJITConfig(w.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.client.RunnerByID(w.ctx, jit.RunnerID); err != nil || got.ScaleSetID != fresh.ID {
		t.Fatalf("runner %+v, %v: want it in the new scale set %d", got, err, fresh.ID)
	}
}
