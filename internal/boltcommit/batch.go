package boltcommit

import (
	"errors"
	"runtime/debug"
	"slices"

	bbolt "go.etcd.io/bbolt"
)

var (
	// errRetry and errNothingToCommit make db.Update roll back; neither ever
	// reaches a caller.
	errRetry           = errors.New("boltcommit: a function failed; run the others again")
	errNothingToCommit = errors.New("boltcommit: no function wrote anything")

	errGoexit = errors.New("boltcommit: write function called runtime.Goexit")
)

// batch is the functions one leader commits together.
type batch struct {
	c     *Committer
	calls []*call
	// running is the call whose function is executing, so that a function
	// ending its goroutine (runtime.Goexit, as t.FailNow does) can be told
	// apart from the others, which must not be lost with it.
	running *call
	// done is set once every call of the batch has its final result.
	done bool
}

// run executes the batch until every call has its final result: a
// transaction is retried without each function that fails, and committed
// once all the rest succeeded.
func (b *batch) run() {
	live := slices.Clone(b.calls)
	// failed holds the functions taken out. Their errors were computed
	// against the writes of the functions before them, so they are final
	// only if those writes commit.
	var failed []*call
	for len(live) > 0 {
		failedAt := -1
		wrote := false
		var afterCommit func()
		err := b.c.db.Update(func(tx *bbolt.Tx) error {
			for i, cl := range live {
				cl.err = b.invoke(cl, tx)
				if u, ok := cl.err.(*unchanged); ok {
					cl.err, cl.wrote = u.err, false
					continue
				}
				if cl.err != nil {
					failedAt = i
					return errRetry
				}
				cl.wrote, wrote = true, true
			}
			if !wrote {
				return errNothingToCommit
			}
			if b.c.onCommit != nil {
				afterCommit = b.c.onCommit(tx)
			}
			return nil
		})
		switch {
		case err == errRetry:
			b.c.stats.rollbacks.Add(1)
			failed = append(failed, live[failedAt])
			live = slices.Delete(live, failedAt, failedAt+1)
			continue
		case err == errNothingToCommit:
			// Nothing was written in this attempt, nor (the functions being
			// deterministic) before any failure of an earlier one: every
			// result was computed against committed state.
		case err != nil:
			// The transaction could not begin or its commit failed: what
			// every function saw is not on disk.
			for _, cl := range live {
				cl.err = err
			}
			for _, cl := range failed {
				cl.err = err
			}
		default:
			b.c.stats.commits.Add(1)
			b.c.stats.writes.Add(uint64(countWrites(live)))
			// Done before the hook runs: should it panic, the callers are
			// still owed their committed results, not a second run.
			b.done = true
			if afterCommit != nil {
				afterCommit()
			}
		}
		break
	}
	b.done = true
}

// invoke runs one function, turning its panic into its result.
func (b *batch) invoke(cl *call, tx *bbolt.Tx) (err error) {
	b.running = cl
	defer func() {
		if v := recover(); v != nil {
			b.running = nil
			err = &PanicError{Value: v, Stack: debug.Stack(), owner: cl}
		}
	}()
	err = cl.fn(tx)
	b.running = nil
	return err
}

// release ends the leader's turn: it hands leadership to the first waiting
// writer, then gives every caller of the batch its result. If the leader's
// goroutine is ending without the batch done (a function called
// runtime.Goexit), the calls still owed a result go back to the front of the
// line instead; nothing of theirs was committed.
func (b *batch) release(self *call) {
	c := b.c
	var resolved []*call
	c.mu.Lock()
	if b.done {
		resolved = b.calls
	} else {
		var again []*call
		for _, cl := range b.calls {
			switch cl {
			case self:
			case b.running:
				cl.err = errGoexit
				resolved = append(resolved, cl)
			default:
				again = append(again, cl)
			}
		}
		c.pending = append(again, c.pending...)
	}
	var next *call
	if len(c.pending) > 0 {
		next = c.pending[0]
	} else {
		c.leading = false
	}
	c.mu.Unlock()

	if next != nil {
		next.wake <- true
	}
	for _, cl := range resolved {
		if cl != self {
			cl.wake <- false
		}
	}
}

func countWrites(calls []*call) int {
	n := 0
	for _, cl := range calls {
		if cl.wrote {
			n++
		}
	}
	return n
}
