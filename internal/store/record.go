package store

import (
	"fmt"
	"strings"
)

// Kind names a kind of record the store writes by compare-and-set. Every
// kind shares one expectation (Expectation), one conflict error
// (ConflictError) and, in each adapter, one conditional write: instances,
// jobs, spot breakers, leases and budgets differ in what they hold, not in how a
// lost race is detected and reported.
type Kind string

// The record kinds.
const (
	KindInstance    Kind = "instance"
	KindJob         Kind = "job"
	KindSpotBreaker Kind = "spot breaker"
	KindLease       Kind = "lease"
	KindBudget      Kind = "budget"
	KindCursor      Kind = "cursor"
)

// Expectation is what a compare-and-set requires of the stored record:
// Version (0: no record stored) and, for kinds that have one, Status ("":
// any). A write whose expectation no longer holds writes nothing and
// returns Conflict().
type Expectation struct {
	Kind    Kind
	Key     string
	Status  string
	Version int64
}

// Expect returns the expectation of a write of kind's record key, read at
// status and version. It is generic so that each kind's typed status
// (runner.Status, runner.JobStatus, none) goes in without a conversion at
// every call.
func Expect[S ~string](kind Kind, key string, status S, version int64) Expectation {
	return Expectation{Kind: kind, Key: key, Status: string(status), Version: version}
}

// Met reports whether a stored record at status and version (found false:
// none stored) is the one the write expects.
func (e Expectation) Met(found bool, status string, version int64) bool {
	if !found {
		return e.Version == 0
	}
	return version == e.Version && (e.Status == "" || status == e.Status)
}

// Conflict is the error of a write whose expectation did not hold.
func (e Expectation) Conflict() *ConflictError {
	return &ConflictError{Kind: e.Kind, Key: e.Key, ExpectedStatus: e.Status, ExpectedVersion: e.Version}
}

// ConflictError reports a compare-and-set that found its record changed
// (or gone) since it was read: re-read and decide again, never overwrite.
// It names the losing write: the record, and the status and version it
// expected. Key is the instance name, the job key (runner.JobKey), the
// pool of a spot breaker, the lease's or the cursor's name.
type ConflictError struct {
	Kind            Kind
	Key             string
	ExpectedStatus  string
	ExpectedVersion int64
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "store: %s %q is no longer ", e.Kind, e.Key)
	if e.ExpectedStatus != "" {
		fmt.Fprintf(&b, "%s ", e.ExpectedStatus)
	}
	fmt.Fprintf(&b, "at version %d", e.ExpectedVersion)
	return b.String()
}

// Is makes errors.Is(err, ErrConflict) true for every *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
