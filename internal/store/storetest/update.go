package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var updateTests = []contractTest{
	{"Update/SameStatusFieldUpdate", updateSameStatusFieldUpdate},
	{"Update/DeletedReleasesSlot", updateDeletedReleasesSlot},
	{"Update/DeletedStillBlocksName", updateDeletedStillBlocksName},
	{"Update/DeletedGetsExpiry", updateDeletedGetsExpiry},
	{"Update/ExpiredDeletedNameCanBeReused", updateExpiredDeletedNameCanBeReused},
}

func updateSameStatusFieldUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, roomy)
	running := mustMove(t, s, inst.Name, runner.StatusCreating, runner.StatusRunning)

	next := running.Clone()
	next.RunnerStatus = runner.RunnerActive
	next.ActiveJobID = 77
	next.Attempts = 2
	next.NextAttemptAt = now().Add(time.Minute)
	next.UpdatedAt = now()
	if err := s.UpdateInstance(ctx, runner.StatusRunning, next); err != nil {
		t.Fatalf("same-status update: %v", err)
	}
	if next.Version != running.Version+1 {
		t.Fatalf("Version = %d, want %d", next.Version, running.Version+1)
	}
	requireSameInstance(t, next, mustGet(t, s, inst.Name))
	requireUsage(t, s, "p", 1)
}

func updateDeletedReleasesSlot(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := newInstance("p", 1), newInstance("p", 2)
	mustCreate(t, s, a, 2)
	mustCreate(t, s, b, 2)
	c := newInstance("p", 3)
	if err := s.CreateInstance(ctx, admit(c, 2)); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("got %v, want ErrPoolFull", err)
	}

	// Slots are held all along the way to deleted, and released only there.
	mustMove(t, s, a.Name, runner.StatusPendingDelete, runner.StatusDeleting)
	requireUsage(t, s, "p", 2)
	mustMove(t, s, a.Name, runner.StatusDeleted)
	requireUsage(t, s, "p", 1)

	mustCreate(t, s, c, 2)
	requireUsage(t, s, "p", 2)
}

func updateDeletedStillBlocksName(t *testing.T, s store.Store) {
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, roomy)
	mustMove(t, s, inst.Name, pathToDeleted...)

	got := mustGet(t, s, inst.Name)
	if got.Status != runner.StatusDeleted {
		t.Fatalf("stored status %s, want deleted", got.Status)
	}
	// A late redelivery of the queued webhook must not make a second runner.
	err := s.CreateInstance(context.Background(), admit(newInstance("p", 1), roomy))
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("create over a deleted record: got %v, want ErrAlreadyExists", err)
	}
	requireUsage(t, s, "p", 0)
	if got := mustGet(t, s, inst.Name); got.Status != runner.StatusDeleted {
		t.Fatalf("record overwritten: status %s", got.Status)
	}
}

func updateDeletedGetsExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()

	// The writer set no expiry: the store keeps the record DeletedRetention.
	a := newInstance("p", 1)
	mustCreate(t, s, a, roomy)
	before := time.Now()
	done := mustMove(t, s, a.Name, pathToDeleted...)
	after := time.Now()
	got := mustGet(t, s, a.Name)
	lo := before.Add(store.DeletedRetention).Add(-time.Second)
	hi := after.Add(store.DeletedRetention).Add(time.Second)
	if got.ExpiresAt.Before(lo) || got.ExpiresAt.After(hi) {
		t.Fatalf("ExpiresAt = %v, want now + %v", got.ExpiresAt, store.DeletedRetention)
	}
	if !done.ExpiresAt.Equal(got.ExpiresAt) {
		t.Fatalf("caller's ExpiresAt %v differs from stored %v", done.ExpiresAt, got.ExpiresAt)
	}

	// The writer chose one: kept as written.
	b := newInstance("p", 2)
	mustCreate(t, s, b, roomy)
	deleting := mustMove(t, s, b.Name, runner.StatusPendingDelete, runner.StatusDeleting)
	next, _ := deleting.Transition(runner.StatusDeleted, now())
	next.ExpiresAt = now().Add(3 * 24 * time.Hour)
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, next); err != nil {
		t.Fatal(err)
	}
	requireSameInstance(t, next, mustGet(t, s, b.Name))
}

func updateExpiredDeletedNameCanBeReused(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := newInstance("p", 1)
	mustCreate(t, s, old, 1)
	deleting := mustMove(t, s, old.Name, runner.StatusPendingDelete, runner.StatusDeleting)
	gone, _ := deleting.Transition(runner.StatusDeleted, now())
	gone.ExpiresAt = now().Add(-time.Minute)
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, gone); err != nil {
		t.Fatal(err)
	}

	again := newInstance("p", 1)
	again.Owner = runner.Owner{Org: "second-life"}
	if err := s.CreateInstance(ctx, admit(again, 1)); err != nil {
		t.Fatalf("create over an expired deleted record: %v", err)
	}
	if again.Version != 1 {
		t.Fatalf("Version = %d, want 1", again.Version)
	}
	requireSameInstance(t, again, mustGet(t, s, again.Name))
	requireUsage(t, s, "p", 1)
	live, err := s.ListLiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListLiveInstances", live, again.Name)
	// And it is an ordinary instance again: it can be deleted and frees its slot.
	mustMove(t, s, again.Name, pathToDeleted...)
	requireUsage(t, s, "p", 0)
}
