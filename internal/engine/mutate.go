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

// mutate reads the instance, asks decide for its next version and writes it
// with a compare-and-set. On a lost race it re-reads and decides again — it
// never overwrites. It returns the instance as written, or as last read when
// decide returned errNoChange (with a nil error).
func (in *Intake) mutate(ctx context.Context, name string, decide func(cur *runner.Instance) (*runner.Instance, error)) (*runner.Instance, bool, error) {
	return in.mutateFrom(ctx, name, nil, decide)
}

// mutateFrom is mutate starting from an instance the caller has just read
// or written, saving a read per write; a stale start costs one failed
// compare-and-set and a re-read, never a wrong write.
func (in *Intake) mutateFrom(ctx context.Context, name string, known *runner.Instance, decide func(cur *runner.Instance) (*runner.Instance, error)) (*runner.Instance, bool, error) {
	for range maxConflictRetries {
		cur := known
		known = nil
		if cur == nil {
			var err error
			if cur, err = in.store.GetInstance(ctx, name); err != nil {
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
		next.Version = cur.Version
		if err := in.store.UpdateInstance(ctx, cur.Status, next); err != nil {
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			return cur, false, err
		}
		return next, true, nil
	}
	return nil, false, fmt.Errorf("instance %q: gave up after %d conflicting writes", name, maxConflictRetries)
}
