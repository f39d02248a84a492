package bolt_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
)

// deleteAt walks inst to deleted, its last change at `at`.
func deleteAt(t *testing.T, s store.Store, inst *runner.Instance, at time.Time) *runner.Instance {
	t.Helper()
	inst = move(t, s, inst, runner.StatusPendingDelete, runner.StatusDeleting)
	next, err := inst.Transition(runner.StatusDeleted, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateInstance(context.Background(), runner.StatusDeleting, next); err != nil {
		t.Fatal(err)
	}
	return next
}

func names(list []*runner.Instance) []string {
	out := []string{}
	for _, in := range list {
		out = append(out, in.Name)
	}
	return out
}

func TestListDeletedInstances(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, bolt.WithClock(clock.Now))
	var lister store.DeletedLister = s

	if list, err := lister.ListDeletedInstances(ctx, ""); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("empty store: %v, %v; want an empty, non-nil list", list, err)
	}

	live, old, recent, other, expired := pendingInstance("p", 1), pendingInstance("p", 2), pendingInstance("p", 3), pendingInstance("q", 4), pendingInstance("p", 5)
	for _, inst := range []*runner.Instance{live, old, recent, other, expired} {
		if err := s.CreateInstance(ctx, admit(inst, 10)); err != nil {
			t.Fatal(err)
		}
	}
	start := clock.Now()
	deleteAt(t, s, old, start.Add(time.Minute))
	deleteAt(t, s, recent, start.Add(3*time.Minute))
	deleteAt(t, s, other, start.Add(2*time.Minute))
	// Deleted with a retention of one hour of its own: gone for listing
	// once the hour has passed, even before a purge removes it.
	gone := move(t, s, expired, runner.StatusPendingDelete, runner.StatusDeleting)
	next, _ := gone.Transition(runner.StatusDeleted, start.Add(4*time.Minute))
	next.ExpiresAt = start.Add(time.Hour)
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, next); err != nil {
		t.Fatal(err)
	}

	check := func(pool string, want ...string) {
		t.Helper()
		list, err := lister.ListDeletedInstances(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(list); !slices.Equal(got, want) {
			t.Errorf("ListDeletedInstances(%q) = %v, want %v (newest first)", pool, got, want)
		}
		for _, in := range list {
			if in.Status != runner.StatusDeleted {
				t.Errorf("%s listed with status %s", in.Name, in.Status)
			}
		}
	}
	check("", expired.Name, recent.Name, other.Name, old.Name)
	check("p", expired.Name, recent.Name, old.Name)
	check("q", other.Name)
	check("no-such-pool")

	clock.Advance(2 * time.Hour)
	check("p", recent.Name, old.Name)

	// The live listing is untouched by any of this.
	if list, err := s.ListLiveInstances(ctx); err != nil || !slices.Equal(names(list), []string{live.Name}) {
		t.Errorf("ListLiveInstances = %v, %v; want only %s", names(list), err, live.Name)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lister.ListDeletedInstances(cancelled, ""); err == nil {
		t.Error("a cancelled context listed anyway")
	}
}
