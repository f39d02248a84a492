package runner

import (
	"fmt"
	"slices"
)

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

// instanceTable is the instance table as the generic check sees it:
// staying in the same status (a write that only changes other fields, such
// as the runner status or the attempt count) is allowed for every live
// status; a deleted instance is final.
var instanceTable = Transitions[Status]{
	kind: "instance", next: transitions,
	stays: func(s Status) bool { return s.Valid() && s.Live() },
}

// CanTransition reports whether an instance may move from one status to
// another.
func CanTransition(from, to Status) bool { return instanceTable.Can(from, to) }

// NextStatuses returns the statuses reachable from s in one step.
func NextStatuses(s Status) []Status { return instanceTable.Next(s) }

// CheckTransition returns an *IllegalTransitionError unless from -> to is legal.
func CheckTransition(name string, from, to Status) error {
	return instanceTable.Check(name, from, to)
}

// Transitions is one record kind's table of legal status changes with the
// one check of it. Instances and jobs each have a table; both are checked
// by this code, so a rule about tables (a same-status write, the error a
// refused change returns) is written once.
type Transitions[S ~string] struct {
	kind string
	next map[S][]S
	// stays reports whether a write may keep status s: one that changes
	// only other fields.
	stays func(S) bool
}

// Can reports whether a record may move from one status to another.
func (t Transitions[S]) Can(from, to S) bool {
	if from == to {
		return t.stays(from)
	}
	return slices.Contains(t.next[from], to)
}

// Next returns the statuses reachable from s in one step.
func (t Transitions[S]) Next(s S) []S { return slices.Clone(t.next[s]) }

// Check returns an *IllegalTransitionError unless from -> to is legal for
// the record name.
func (t Transitions[S]) Check(name string, from, to S) error {
	if !t.Can(from, to) {
		return &IllegalTransitionError{Kind: t.kind, Name: name, From: string(from), To: string(to)}
	}
	return nil
}

// IllegalTransitionError is returned when a caller asks for a status change
// its record's table does not allow, whatever the kind: an instance's
// (Name is its name) or a job's (Name is its JobKey). Retrying cannot help;
// the caller's decision is wrong for the status it read.
type IllegalTransitionError struct {
	Kind     string
	Name     string
	From, To string
}

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("%s %q: illegal status transition %s -> %s", e.Kind, e.Name, e.From, e.To)
}
