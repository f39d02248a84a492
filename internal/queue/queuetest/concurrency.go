package queuetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
)

func concurrentSendersAndReceiversLoseNothing(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	const (
		senders   = 4
		perSender = 15
		receivers = 4
		total     = senders * perSender
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()

	var (
		mu        sync.Mutex
		delivered = map[string]int{}
		errs      []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				if err := q.Send(ctx, fmt.Appendf(nil, "s%d-m%d", s, i), 0); err != nil {
					fail(fmt.Errorf("send: %w", err))
					return
				}
			}
		})
	}
	// Receivers stop as soon as everything has come through, not at the end
	// of their current wait.
	receiveCtx, allDelivered := context.WithCancel(ctx)
	defer allDelivered()
	for range receivers {
		wg.Go(func() {
			for receiveCtx.Err() == nil {
				msgs, err := q.Receive(receiveCtx, queue.ReceiveOptions{Max: 10, Visibility: longVisibility, Wait: second})
				if err != nil {
					if receiveCtx.Err() == nil {
						fail(fmt.Errorf("receive: %w", err))
					}
					return
				}
				for _, m := range msgs {
					if err := q.Ack(ctx, m); err != nil {
						fail(fmt.Errorf("ack: %w", err))
						return
					}
					mu.Lock()
					delivered[string(m.Body)]++
					if len(delivered) == total {
						allDelivered()
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(delivered) != total {
		t.Fatalf("%d of %d messages delivered before the deadline", len(delivered), total)
	}
	duplicates := 0
	for _, n := range delivered {
		duplicates += n - 1
	}
	if duplicates > 0 {
		// At-least-once allows it, but with acks well inside the visibility
		// timeout it should be rare enough to notice.
		t.Logf("%d duplicate deliveries out of %d messages", duplicates, total)
	}
	requireNothing(t, q, 0, "every message was acknowledged")
}
