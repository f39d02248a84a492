package storetest

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var readTests = []contractTest{
	{"Read/GetMissingIsNotFound", readGetMissingIsNotFound},
	{"Read/GetReturnsACopy", readGetReturnsACopy},
	{"Read/ListsSkipDeleted", readListsSkipDeleted},
	{"Read/EmptyStoreListsNothing", readEmptyStoreListsNothing},
}

func readGetMissingIsNotFound(t *testing.T, s store.Store) {
	requireNotFound(t, s, "runfleet-nobody-1-1")
}

// A caller preparing its next write must not be able to change what the
// store holds (or what another reader sees) by editing what it read.
func readGetReturnsACopy(t *testing.T, s store.Store) {
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, roomy)
	want := inst.Clone()

	inst.Labels[0] = "edited-after-create"
	first := mustGet(t, s, inst.Name)
	first.Labels[0] = "edited-after-get"
	first.Status = runner.StatusRunning
	requireSameInstance(t, want, mustGet(t, s, inst.Name))
}

func readListsSkipDeleted(t *testing.T, s store.Store) {
	ctx := context.Background()
	a1, a2, a3 := newInstance("a", 1), newInstance("a", 2), newInstance("a", 3)
	b1 := newInstance("b", 1)
	// A pool whose name is a prefix of another must not leak into it.
	ab1 := newInstance("ab", 1)
	for _, in := range []*runner.Instance{a1, a2, a3, b1, ab1} {
		mustCreate(t, s, in, roomy)
	}
	mustMove(t, s, a2.Name, pathToDeleted...)
	// Live but on its way out: still listed.
	mustMove(t, s, a3.Name, runner.StatusPendingDelete)

	byA, err := s.ListInstancesByPool(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool(a)", byA, a1.Name, a3.Name)
	for _, in := range byA {
		if in.Name == a3.Name {
			requireSameInstance(t, mustGet(t, s, a3.Name), in)
		}
	}

	byB, err := s.ListInstancesByPool(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool(b)", byB, b1.Name)

	none, err := s.ListInstancesByPool(ctx, "unknown")
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool(unknown)", none)

	live, err := s.ListLiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListLiveInstances", live, a1.Name, a3.Name, b1.Name, ab1.Name)
	for _, in := range live {
		if in.Pool == "" || in.Version == 0 {
			t.Fatalf("listed instance %q is incomplete: %+v", in.Name, in)
		}
	}
}

func readEmptyStoreListsNothing(t *testing.T, s store.Store) {
	live, err := s.ListLiveInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListLiveInstances", live)
}
