package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// maxConflictRetries bounds how often one decision is re-made after losing a
// compare-and-set race; a higher count means something is writing in a loop.
const maxConflictRetries = 16

// errNoChange is returned by a decide function that finds nothing to write.
var errNoChange = errors.New("no change")

// compareAndSet is the one read–decide–write loop of every status write:
// start from known (or read), ask decide for the next version, write it
// conditionally on the version read, and on a lost race read and decide
// again — never overwrite. It returns the record as written, or as last read
// when decide returned errNoChange (with a nil error).
func compareAndSet[R any](what string, known *R, read func() (*R, error), decide func(cur *R) (*R, error), write func(cur, next *R) error) (*R, bool, error) {
	for range maxConflictRetries {
		cur := known
		known = nil
		if cur == nil {
			var err error
			if cur, err = read(); err != nil {
				return nil, false, err
			}
		}
		next, err := decide(cur)
		if errors.Is(err, errNoChange) {
			return cur, false, nil
		}
		if err != nil {
			return cur, false, err
		}
		if err := write(cur, next); err != nil {
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			return cur, false, err
		}
		return next, true, nil
	}
	return nil, false, fmt.Errorf("%s: gave up after %d conflicting writes", what, maxConflictRetries)
}

// mutate reads the instance, asks decide for its next version and writes it
// with a compare-and-set (compareAndSet).
func (lg *Ledger) mutate(ctx context.Context, name string, decide func(cur *runner.Instance) (*runner.Instance, error)) (*runner.Instance, bool, error) {
	return lg.mutateFrom(ctx, name, nil, decide)
}

// mutateFrom is mutate starting from an instance the caller has just read
// or written, saving a read per write; a stale start costs one failed
// compare-and-set and a re-read, never a wrong write.
//
// Every committed status change is told to the observer, with the status
// the write replaced.
func (lg *Ledger) mutateFrom(ctx context.Context, name string, known *runner.Instance, decide func(cur *runner.Instance) (*runner.Instance, error)) (*runner.Instance, bool, error) {
	var from runner.Status
	next, wrote, err := compareAndSet(fmt.Sprintf("instance %q", name), known,
		func() (*runner.Instance, error) { return lg.store.GetInstance(ctx, name) },
		decide,
		func(cur, next *runner.Instance) error {
			next.Version = cur.Version
			from = cur.Status
			return lg.store.UpdateInstance(ctx, cur.Status, next)
		})
	if wrote && err == nil && next.Status != from {
		lg.observer.InstanceChanged(next, from)
	}
	return next, wrote, err
}

// mutateJob is mutateFrom for the job ledger.
func (lg *Ledger) mutateJob(ctx context.Context, key string, known *runner.Job, decide func(cur *runner.Job) (*runner.Job, error)) (*runner.Job, bool, error) {
	return compareAndSet("job "+key, known,
		func() (*runner.Job, error) { return lg.store.GetJob(ctx, key) },
		decide,
		func(cur, next *runner.Job) error {
			next.Version = cur.Version
			return lg.store.UpdateJob(ctx, cur.Status, next)
		})
}
