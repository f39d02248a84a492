package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// A job's instance, once deleted, leaves the live listing and shows in the
// deleted one, of its pool and of all pools.
func TestListDeletedInstances(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.StartWorkers(1)
	ctx := context.Background()
	gone, kept := w.RunJob(5001), w.RunJob(5002)
	if _, err := w.Engine.OperatorDelete(ctx, gone, engine.DeleteMode(false)); err != nil {
		t.Fatal(err)
	}
	w.WaitStatus(gone, runner.StatusDeleted)

	for _, pool := range []string{"", enginetest.Pool} {
		list, err := w.Engine.ListDeletedInstances(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != gone || list[0].Status != runner.StatusDeleted {
			t.Errorf("ListDeletedInstances(%q) = %v; want only %s", pool, list, gone)
		}
	}
	if list, err := w.Engine.ListDeletedInstances(ctx, "no-such-pool"); err != nil || len(list) != 0 {
		t.Errorf("deleted of an unknown pool = %v, %v; want none", list, err)
	}
	// The live listing may hold a replacement for the deleted runner's
	// job; it never holds the deleted instance itself.
	live, err := w.Engine.ListInstances(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var liveNames []string
	for _, in := range live {
		liveNames = append(liveNames, in.Name)
	}
	if slices.Contains(liveNames, gone) || !slices.Contains(liveNames, kept) {
		t.Errorf("live = %v; want %s and not %s", liveNames, kept, gone)
	}
}

// portOnly is a store seen only through store.Store, as the engine sees
// DynamoDB's: whatever optional abilities the store behind it has are
// hidden.
type portOnly struct{ store.Store }

func TestListDeletedInstancesNeedsTheStoreAbility(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{WrapStore: func(s store.Store) store.Store { return portOnly{s} }})
	_, err := w.Engine.ListDeletedInstances(context.Background(), "")
	if !errors.Is(err, engine.ErrDeletedNotListed) {
		t.Fatalf("err = %v, want engine.ErrDeletedNotListed", err)
	}
}
