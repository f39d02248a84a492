package runner

import "fmt"

// transitions is THE table of legal instance status changes. Every status
// write in runfleet is checked against it. Recovery edges from every
// intermediate state (creating, deleting, unknown …) back to pending_delete
// and pending_force_delete are deliberate: a controller that crashed mid-step
// must always be able to resume without an operator (lessons-from-peers P12).
var transitions = map[Status][]Status{
	StatusPendingCreate: {StatusCreating, StatusError, StatusPendingDelete, StatusPendingForceDelete},
	// creating -> pending_create: a create that failed before anything was
	// left behind (or after the half-made machine was deleted by name) is
	// retried, so the queued job still gets its one runner.
	StatusCreating:      {StatusRunning, StatusPendingCreate, StatusError, StatusPendingDelete, StatusPendingForceDelete, StatusUnknown},
	StatusRunning:       {StatusStopped, StatusError, StatusPendingDelete, StatusPendingForceDelete, StatusUnknown},
	StatusStopped:       {StatusRunning, StatusError, StatusPendingDelete, StatusPendingForceDelete, StatusUnknown},
	StatusError:         {StatusPendingDelete, StatusPendingForceDelete},
	StatusPendingDelete: {StatusDeleting, StatusPendingForceDelete},
	// A forced delete never falls back to an ordinary one: the operator's
	// decision outranks any later writer.
	StatusPendingForceDelete: {StatusDeleting},
	StatusDeleting:           {StatusDeleted, StatusPendingDelete, StatusPendingForceDelete, StatusError},
	StatusUnknown:            {StatusRunning, StatusStopped, StatusError, StatusPendingDelete, StatusPendingForceDelete},
	StatusDeleted:            {},
}

// CanTransition reports whether an instance may move from one status to
// another. Staying in the same status (a write that only changes other fields,
// such as the runner status or the attempt count) is allowed for every live
// status; a deleted instance is final.
func CanTransition(from, to Status) bool {
	if from == to {
		return from.Valid() && from.Live()
	}
	for _, next := range transitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// NextStatuses returns the statuses reachable from s in one step.
func NextStatuses(s Status) []Status {
	return append([]Status(nil), transitions[s]...)
}

// IllegalTransitionError is returned when a caller asks for a status change
// the transition table does not allow.
type IllegalTransitionError struct {
	Instance string
	From, To Status
}

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("instance %q: illegal status transition %s -> %s", e.Instance, e.From, e.To)
}

// CheckTransition returns an *IllegalTransitionError unless from -> to is legal.
func CheckTransition(name string, from, to Status) error {
	if !CanTransition(from, to) {
		return &IllegalTransitionError{Instance: name, From: from, To: to}
	}
	return nil
}
