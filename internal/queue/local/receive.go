package local

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/queue"
)

// waiter is a Receive parked until a message is handed to it or it is woken
// to look again.
type waiter struct {
	max        int
	visibility time.Duration
	// handoff is written exactly once by whoever removes the waiter from
	// q.waiters (a Send, or settleLocked waking it), and never by the waiter
	// itself; its buffer means that never blocks.
	handoff chan handoff
}

// handoff is either messages already marked delivered to the waiter, an
// error, or (retry) a wake-up: something is visible, take it.
type handoff struct {
	msgs  []queue.Message
	err   error
	retry bool
}

func (w *waiter) deliver(h handoff) {
	w.handoff <- h
}

// Receive returns up to opts.Max visible messages, hidden from other
// receivers for opts.Visibility (Options.DefaultVisibility if 0). With
// nothing visible it blocks up to opts.Wait, without polling, and returns
// an empty slice if nothing came. Max 0 means 1.
func (q *Queue) Receive(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	if opts.Max == 0 {
		opts.Max = 1
	}
	if opts.Max < 0 || opts.Max > maxBatch {
		return nil, fmt.Errorf("local queue: receive: Max %d outside 1..%d", opts.Max, maxBatch)
	}
	if opts.Visibility <= 0 {
		opts.Visibility = q.opts.DefaultVisibility
	}
	// The wait is real time (a receiver blocks on a timer); what is visible
	// is decided on the queue's clock.
	until := time.Now().Add(opts.Wait)
	var deadline *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, queue.ErrClosed
		}
		now := q.opts.Now()
		if q.hasNextDue && !q.nextDue.After(now) {
			q.mu.Unlock()
			msgs, err := q.take(now, opts.Max, opts.Visibility)
			if err != nil || len(msgs) > 0 {
				return msgs, err
			}
			// Another receiver took it first; the mirror is already as new
			// as what take saw, so looking again is not a busy loop.
			continue
		}
		if opts.Wait <= 0 || !time.Now().Before(until) {
			q.mu.Unlock()
			return nil, nil
		}
		// Registered under the same lock as the check above: any commit
		// that makes a message visible after it settles the waiters under
		// this lock too, and so finds this one.
		w := &waiter{max: opts.Max, visibility: opts.Visibility, handoff: make(chan handoff, 1)}
		q.waiters = append(q.waiters, w)
		q.settleLocked()
		q.mu.Unlock()

		if deadline == nil {
			deadline = time.NewTimer(time.Until(until))
			defer deadline.Stop()
		}
		var h handoff
		select {
		case h = <-w.handoff:
		case <-deadline.C:
			return q.abandon(w, nil)
		case <-ctx.Done():
			return q.abandon(w, ctx.Err())
		case <-q.closing:
			return q.abandon(w, queue.ErrClosed)
		}
		if !h.retry {
			return h.msgs, h.err
		}
	}
}

// abandon takes w off the waiter list. If it is no longer there, it was
// served meanwhile: messages handed to it are already marked delivered, so
// they are returned rather than left hidden for a whole visibility timeout,
// and a wake-up it will not act on is passed to the next waiter.
func (q *Queue) abandon(w *waiter, reason error) ([]queue.Message, error) {
	q.mu.Lock()
	if i := slices.Index(q.waiters, w); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
		q.settleLocked()
		q.mu.Unlock()
		return nil, reason
	}
	q.mu.Unlock()
	// A Send may still be committing what it hands over; it delivers
	// without the lock.
	h := <-w.handoff
	if h.retry {
		q.mu.Lock()
		q.settleLocked()
		q.mu.Unlock()
		return nil, reason
	}
	return h.msgs, h.err
}

// take delivers what is visible at now. A take that finds nothing (another
// receiver was first) writes nothing and costs no fsync.
func (q *Queue) take(now time.Time, max int, visibility time.Duration) ([]queue.Message, error) {
	var msgs []queue.Message
	err := q.write(func(b buckets) error {
		got, changed, err := b.take(now, max, visibility, q.opts.MaxReceives)
		msgs = got
		switch {
		case err != nil:
			return err
		case !changed:
			return boltcommit.Unchanged(nil)
		}
		return nil
	})
	if err != nil {
		// No commit, so no settle: wake the next waiter for whatever this
		// receiver leaves visible.
		q.mu.Lock()
		q.settleLocked()
		q.mu.Unlock()
		return nil, fmt.Errorf("local queue: receive: %w", err)
	}
	return msgs, nil
}

// settleLocked keeps the promise that no waiter sleeps through a visible
// message: while anyone waits, either nothing is visible and the timer is
// armed for the next due time, or the first waiter is woken to take what is
// visible (the commit of its take settles again, for the rest). Call with
// q.mu held, after anything that changes the waiters or the mirror.
func (q *Queue) settleLocked() {
	if q.closed || len(q.waiters) == 0 || !q.hasNextDue {
		q.timer.Stop()
		return
	}
	if d := q.nextDue.Sub(q.opts.Now()); d > 0 {
		q.timer.Reset(d)
		return
	}
	q.timer.Stop()
	w := q.waiters[0]
	q.waiters = q.waiters[1:]
	w.deliver(handoff{retry: true})
}

func (q *Queue) onTimer() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.settleLocked()
}
