package scaleset_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

func TestJITConfigAndRunnerLookups(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	jit, err := w.client.GenerateJITConfig(w.ctx, set.ID, "runner-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if jit.Runner.ID == 0 || jit.Runner.Name != "runner-1" || jit.Runner.ScaleSetID != set.ID {
		t.Errorf("runner %+v", jit.Runner)
	}
	if _, err := base64.StdEncoding.DecodeString(jit.EncodedJITConfig); err != nil || jit.EncodedJITConfig == "" {
		t.Errorf("encoded config %q: %v", jit.EncodedJITConfig, err)
	}

	byID, err := w.client.RunnerByID(w.ctx, jit.Runner.ID)
	if err != nil || *byID != jit.Runner {
		t.Errorf("RunnerByID = %+v, %v", byID, err)
	}
	byName, err := w.client.RunnerByName(w.ctx, "runner-1")
	if err != nil || *byName != jit.Runner {
		t.Errorf("RunnerByName = %+v, %v", byName, err)
	}
	_, err = w.client.RunnerByName(w.ctx, "nobody")
	wantKind(t, err, scaleset.ErrRunnerNotFound)
	_, err = w.client.RunnerByID(w.ctx, 123456)
	wantKind(t, err, scaleset.ErrRunnerNotFound)

	_, err = w.client.GenerateJITConfig(w.ctx, set.ID, "runner-1", "")
	wantKind(t, err, scaleset.ErrRunnerExists)
	_, err = w.client.GenerateJITConfig(w.ctx, 424242, "runner-2", "")
	wantKind(t, err, scaleset.ErrScaleSetNotFound)
}

// The busy guard: removing a runner that runs a job is refused with
// ErrRunnerBusy, which is also the engine's github.ErrRunnerBusy. Once the
// job completes the removal goes through; a second removal is
// ErrRunnerNotFound (done).
func TestRemoveRunnerBusyGuard(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	jit, err := w.client.GenerateJITConfig(w.ctx, set.ID, "runner-1", "_work")
	if err != nil {
		t.Fatal(err)
	}
	req := w.fake.QueueJob(set.ID, scalesettest.JobSpec{})
	if err := w.fake.StartJob(req, "runner-1"); err != nil {
		t.Fatal(err)
	}

	err = w.client.RemoveRunner(w.ctx, jit.Runner.ID)
	e := wantKind(t, err, scaleset.ErrRunnerBusy)
	if !errors.Is(err, github.ErrRunnerBusy) {
		t.Errorf("%v: want github.ErrRunnerBusy too", err)
	}
	if e.Retryable() {
		t.Error("busy is retryable: the caller must decide, not retry blindly")
	}

	if err := w.fake.CompleteJob(req, scaleset.ResultSucceeded); err != nil {
		t.Fatal(err)
	}
	if err := w.client.RemoveRunner(w.ctx, jit.Runner.ID); err != nil {
		t.Fatalf("remove after the job: %v", err)
	}
	wantKind(t, w.client.RemoveRunner(w.ctx, jit.Runner.ID), scaleset.ErrRunnerNotFound)
}
