package scaleset_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// EnsureScaleSet creates a missing scale set with the pool's labels (and
// its name), finds it the next time, and updates labels that changed.
func TestEnsureScaleSetCreatesFindsAndUpdates(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	gpu := w.fake.AddRunnerGroup("gpu")
	spec := scaleset.ScaleSetSpec{Name: "linux-x64", Labels: []string{"linux", "x64"}}

	created, err := w.client.EnsureScaleSet(w.ctx, "gpu", spec)
	if err != nil {
		t.Fatal(err)
	}
	if created.RunnerGroupID != gpu || created.RunnerGroupName != "gpu" {
		t.Errorf("group %d %q, want %d gpu", created.RunnerGroupID, created.RunnerGroupName, gpu)
	}
	if want := []string{"linux-x64", "linux", "x64"}; !slices.Equal(w.fake.ScaleSetLabels(created.ID), want) {
		t.Errorf("labels %v, want %v", w.fake.ScaleSetLabels(created.ID), want)
	}
	if created.CreatedOn.IsZero() || created.Statistics == nil {
		t.Errorf("createdOn %v, statistics %v: want both decoded", created.CreatedOn, created.Statistics)
	}

	again, err := w.client.EnsureScaleSet(w.ctx, "gpu", spec)
	if err != nil || again.ID != created.ID {
		t.Fatalf("second ensure: %v, id %v, want %d", err, again, created.ID)
	}
	if n := w.fake.Count(scalesettest.OpCreateScaleSet) + w.fake.Count(scalesettest.OpUpdateScaleSet); n != 1 {
		t.Errorf("%d creates+updates, want 1", n)
	}

	spec.Labels = []string{"linux", "arm64"}
	updated, err := w.client.EnsureScaleSet(w.ctx, "gpu", spec)
	if err != nil || updated.ID != created.ID {
		t.Fatalf("relabel: %v %v", err, updated)
	}
	if want := []string{"linux-x64", "linux", "arm64"}; !slices.Equal(updated.Labels, want) {
		t.Errorf("labels after update %v, want %v", updated.Labels, want)
	}
}

func TestScaleSetLookupsAndDelete(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")

	_, err := w.client.ScaleSetByName(w.ctx, set.RunnerGroupID, "nope")
	wantKind(t, err, scaleset.ErrScaleSetNotFound)

	byID, err := w.client.ScaleSetByID(w.ctx, set.ID)
	if err != nil || byID.Name != "linux" {
		t.Fatalf("ScaleSetByID: %v %v", byID, err)
	}
	if err := w.client.DeleteScaleSet(w.ctx, set.ID); err != nil {
		t.Fatal(err)
	}
	_, err = w.client.ScaleSetByID(w.ctx, set.ID)
	e := wantKind(t, err, scaleset.ErrScaleSetNotFound)
	if e.StatusCode != 404 || e.TypeName == "" || e.ActivityID == "" {
		t.Errorf("error %+v: want status 404, the exception name and the activity id", e)
	}
	wantKind(t, w.client.DeleteScaleSet(w.ctx, set.ID), scaleset.ErrScaleSetNotFound)
}

func TestUpdateScaleSetByID(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	got, err := w.client.UpdateScaleSet(w.ctx, set.ID, scaleset.ScaleSetSpec{
		Name: "linux", RunnerGroupID: set.RunnerGroupID, Labels: []string{"linux", "big"}, DisableUpdate: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Labels, []string{"linux", "big"}) {
		t.Errorf("labels %v", got.Labels)
	}
}

// A runner group that does not exist is misconfiguration: retrying
// cannot help, and the engine's ErrMisconfigured says so.
func TestRunnerGroupNotFound(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	_, err := w.client.EnsureScaleSet(w.ctx, "missing", scaleset.ScaleSetSpec{Name: "x"})
	wantKind(t, err, scaleset.ErrRunnerGroupNotFound)
	if !errors.Is(err, github.ErrMisconfigured) {
		t.Errorf("%v: want github.ErrMisconfigured too", err)
	}
	if scaleset.IsRetryable(err) {
		t.Errorf("%v: retryable, want not", err)
	}
}
