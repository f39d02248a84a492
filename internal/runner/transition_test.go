package runner

import (
	"errors"
	"testing"
	"time"
)

func TestRecoveryTransitionsFromEveryIntermediateState(t *testing.T) {
	// P12: a controller restarted mid-step must be able to move every
	// intermediate state back into the delete path.
	for _, from := range []Status{StatusPendingCreate, StatusCreating, StatusRunning, StatusStopped, StatusError, StatusDeleting, StatusUnknown} {
		for _, to := range []Status{StatusPendingDelete, StatusPendingForceDelete} {
			if !CanTransition(from, to) {
				t.Errorf("%s -> %s must be legal", from, to)
			}
		}
	}
	if !CanTransition(StatusPendingDelete, StatusPendingForceDelete) {
		t.Error("pending_delete -> pending_force_delete must be legal")
	}
}

func TestDeletedIsFinal(t *testing.T) {
	for _, to := range AllStatuses {
		if CanTransition(StatusDeleted, to) {
			t.Errorf("deleted -> %s must be illegal", to)
		}
	}
}

func TestForcedDeleteNeverDowngrades(t *testing.T) {
	if CanTransition(StatusPendingForceDelete, StatusPendingDelete) {
		t.Error("pending_force_delete -> pending_delete must be illegal")
	}
}

func TestEveryStatusHasATableRow(t *testing.T) {
	for _, s := range AllStatuses {
		if _, ok := transitions[s]; !ok {
			t.Errorf("status %s has no row in the transition table", s)
		}
		for _, to := range transitions[s] {
			if !to.Valid() {
				t.Errorf("row %s names unknown status %q", s, to)
			}
		}
	}
	// Every live status can reach deleted.
	for _, s := range AllStatuses {
		if s == StatusDeleted {
			continue
		}
		if !reachable(s, StatusDeleted) {
			t.Errorf("%s cannot reach deleted", s)
		}
	}
}

func reachable(from, to Status) bool {
	seen := map[Status]bool{from: true}
	queue := []Status{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			return true
		}
		for _, n := range transitions[s] {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}

func TestTransitionReturnsTypedError(t *testing.T) {
	in := &Instance{Name: "x", Status: StatusDeleted}
	_, err := in.Transition(StatusRunning, time.Now())
	var ite *IllegalTransitionError
	if !errors.As(err, &ite) || ite.Kind != "instance" || ite.From != string(StatusDeleted) || ite.To != string(StatusRunning) {
		t.Fatalf("want IllegalTransitionError deleted->running, got %v", err)
	}
}

func TestTransitionCopiesAndStamps(t *testing.T) {
	now := time.Unix(1000, 0)
	in := &Instance{Name: "x", Status: StatusPendingCreate, Labels: []string{"a"}}
	next, err := in.Transition(StatusCreating, now)
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != StatusPendingCreate {
		t.Fatal("Transition must not modify the receiver")
	}
	next.Labels[0] = "b"
	if in.Labels[0] != "a" {
		t.Fatal("Transition must deep-copy labels")
	}
	if !next.StatusChangedAt.Equal(now) || !next.UpdatedAt.Equal(now) {
		t.Fatal("timestamps not set")
	}
}

func TestInstanceNameIsDeterministic(t *testing.T) {
	a := InstanceName("Linux X64", 42, 1)
	if a != InstanceName("Linux X64", 42, 1) {
		t.Fatal("not deterministic")
	}
	if a == InstanceName("Linux X64", 42, 2) {
		t.Fatal("run attempts must differ")
	}
	if a != "runfleet-linux-x64-42-1" {
		t.Fatalf("unexpected name %q", a)
	}
}
