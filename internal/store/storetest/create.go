package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var createTests = []contractTest{
	{"Create/RoundTripsEveryField", createRoundTripsEveryField},
	{"Create/SetsVersionOne", createSetsVersionOne},
	{"Create/SameNameIsAlreadyExists", createSameNameIsAlreadyExists},
	{"Create/FullPoolIsPoolFull", createFullPoolIsPoolFull},
	{"Create/TakenNameInFullPoolIsAlreadyExists", createTakenNameInFullPoolIsAlreadyExists},
	{"Create/PoolsHaveSeparateCapacity", createPoolsHaveSeparateCapacity},
	{"Create/CanceledContextWritesNothing", createCanceledContextWritesNothing},
}

func createRoundTripsEveryField(t *testing.T, s store.Store) {
	want := fullInstance("roundtrip")
	requireEveryFieldSet(t, want)
	mustCreate(t, s, want, roomy)
	requireSameInstance(t, want, mustGet(t, s, want.Name))

	// The same through an update, which rewrites the whole record.
	next, err := want.Transition(runner.StatusCreating, want.UpdatedAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	next.ProviderFault = ""
	next.Labels = nil
	next.NextAttemptAt = time.Time{}
	next.ExpiresAt = time.Time{}
	// A cost of a millionth of a dollar, written by an update as a delete
	// writes it, comes back exact.
	next.Cost = &runner.Cost{USD: 0.000001, USDPerHour: 0.0036, Seconds: 1}
	if err := s.UpdateInstance(context.Background(), want.Status, next); err != nil {
		t.Fatalf("UpdateInstance: %v", err)
	}
	got := mustGet(t, s, want.Name)
	requireSameInstance(t, next, got)
	if !got.NextAttemptAt.IsZero() || !got.ExpiresAt.IsZero() {
		t.Fatalf("cleared times came back set: next_attempt_at=%v expires_at=%v", got.NextAttemptAt, got.ExpiresAt)
	}
}

func createSetsVersionOne(t *testing.T, s store.Store) {
	inst := newInstance("p", 1)
	inst.Version = 42 // whatever the caller had, a new record starts at 1
	mustCreate(t, s, inst, roomy)
	if inst.Version != 1 {
		t.Fatalf("caller's Version = %d after create, want 1", inst.Version)
	}
	if got := mustGet(t, s, inst.Name); got.Version != 1 {
		t.Fatalf("stored Version = %d, want 1", got.Version)
	}
}

func createSameNameIsAlreadyExists(t *testing.T, s store.Store) {
	ctx := context.Background()
	first := newInstance("p", 1)
	mustCreate(t, s, first, roomy)

	second := newInstance("p", 1)
	second.Owner = runner.Owner{Org: "someone-else"}
	err := s.CreateInstance(ctx, admit(second, roomy))
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}
	if second.Version != 0 {
		t.Fatalf("failed create changed the caller's Version to %d", second.Version)
	}
	requireSameInstance(t, first, mustGet(t, s, first.Name))
	requireUsage(t, s, "p", 1)
}

func createFullPoolIsPoolFull(t *testing.T, s store.Store) {
	ctx := context.Background()
	for job := int64(1); job <= 3; job++ {
		mustCreate(t, s, newInstance("p", job), 3)
	}
	requireUsage(t, s, "p", 3)

	extra := newInstance("p", 4)
	if err := s.CreateInstance(ctx, admit(extra, 3)); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("create in a full pool: got %v, want ErrPoolFull", err)
	}
	requireNotFound(t, s, extra.Name)
	requireUsage(t, s, "p", 3)

	// max_runners lowered below what the pool holds: still full, not negative room.
	if err := s.CreateInstance(ctx, admit(extra, 2)); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("create with max below usage: got %v, want ErrPoolFull", err)
	}
	// Raised: room again.
	mustCreate(t, s, extra, 4)
	requireUsage(t, s, "p", 4)
}

func createTakenNameInFullPoolIsAlreadyExists(t *testing.T, s store.Store) {
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, 1)
	err := s.CreateInstance(context.Background(), admit(newInstance("p", 1), 1))
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("taken name in a full pool: got %v, want ErrAlreadyExists", err)
	}
	requireUsage(t, s, "p", 1)
}

func createPoolsHaveSeparateCapacity(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, newInstance("small", 1), 1)
	if err := s.CreateInstance(ctx, admit(newInstance("small", 2), 1)); !errors.Is(err, store.ErrPoolFull) {
		t.Fatalf("got %v, want ErrPoolFull", err)
	}
	mustCreate(t, s, newInstance("large", 1), 2)
	mustCreate(t, s, newInstance("large", 2), 2)
	requireUsage(t, s, "small", 1)
	requireUsage(t, s, "large", 2)
	requireUsage(t, s, "never-used", 0)
}

func createCanceledContextWritesNothing(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inst := newInstance("p", 1)
	if err := s.CreateInstance(ctx, admit(inst, roomy)); err == nil {
		t.Fatal("CreateInstance with a canceled context succeeded")
	}
	requireNotFound(t, s, inst.Name)
	requireUsage(t, s, "p", 0)
}
