package boltcommit

import (
	"fmt"
	"sync/atomic"
)

// Stats count what a Committer did since New, for tests and benchmarks.
type Stats struct {
	// Calls is the number of Update calls.
	Calls uint64
	// Commits is the number of durable commits: fsyncs paid.
	Commits uint64
	// Writes is the number of functions whose writes those commits carried;
	// Writes/Commits is the average group size.
	Writes uint64
	// Rollbacks is the number of transactions rolled back to take out a
	// function that failed, after which the others ran again.
	Rollbacks uint64
}

type counters struct {
	calls, commits, writes, rollbacks atomic.Uint64
}

// Stats returns the counters so far.
func (c *Committer) Stats() Stats {
	return Stats{
		Calls:     c.stats.calls.Load(),
		Commits:   c.stats.commits.Load(),
		Writes:    c.stats.writes.Load(),
		Rollbacks: c.stats.rollbacks.Load(),
	}
}

// PanicError is what Update panics with in the goroutine of a caller whose
// function panicked: the original value, and the stack where it happened
// (the panic itself ran on the leader's goroutine).
type PanicError struct {
	Value any
	Stack []byte
	// owner is the call that panicked, so only its caller re-panics.
	owner *call
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("boltcommit: write function panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
