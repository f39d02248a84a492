package local_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
)

// Many senders and many blocked receivers, as `runfleet serve` runs them:
// every message is delivered exactly once (acks come well inside the
// visibility timeout), no receiver sleeps through one, and the writes share
// commits.
func TestBusySendersAndWaitersShareCommitsAndLoseNothing(t *testing.T) {
	t.Parallel()
	q := openQueue(t, filepath.Join(t.TempDir(), "queue.db"), local.Options{})
	const (
		senders   = 16
		perSender = 40
		receivers = 16
		total     = senders * perSender
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu        sync.Mutex
		delivered = map[string]int{}
		errs      []error
	)
	receiveCtx, allDelivered := context.WithCancel(ctx)
	defer allDelivered()
	var wg sync.WaitGroup
	for range receivers {
		wg.Go(func() {
			for receiveCtx.Err() == nil {
				msgs, err := q.Receive(receiveCtx, queue.ReceiveOptions{Max: 1, Visibility: time.Minute, Wait: 30 * time.Second})
				if err != nil {
					if receiveCtx.Err() == nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				for _, m := range msgs {
					if err := q.Ack(ctx, m); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
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
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				if err := q.Send(ctx, fmt.Appendf(nil, "s%d-m%d", s, i), 0); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(delivered) != total {
		t.Fatalf("%d of %d messages delivered within a minute", len(delivered), total)
	}
	for body, n := range delivered {
		if n != 1 {
			t.Fatalf("%s delivered %d times", body, n)
		}
	}
	stats := q.CommitStats()
	t.Logf("commit stats: %+v", stats)
	if stats.Commits >= stats.Writes {
		t.Fatalf("%d commits for %d writes from %d concurrent writers: nothing was grouped", stats.Commits, stats.Writes, senders+receivers)
	}
}

// Messages that become visible with time, more than the first waiter takes,
// reach every waiter: the timer wakes the first, and each take's commit
// wakes the next one.
func TestDelayedMessagesReachEveryWaiter(t *testing.T) {
	t.Parallel()
	q := openQueue(t, filepath.Join(t.TempDir(), "queue.db"), local.Options{})
	const waiters = 4
	var wg sync.WaitGroup
	got := make(chan int, waiters)
	for range waiters {
		wg.Go(func() {
			msgs, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 2, Visibility: time.Minute, Wait: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- len(msgs)
		})
	}
	waitForWaiters(t, q, waiters)
	for i := range 2 * waiters {
		mustSend(t, q, fmt.Sprint("delayed-", i), 500*time.Millisecond)
	}
	start := time.Now()
	wg.Wait()
	close(got)
	n := 0
	for k := range got {
		if k == 0 {
			t.Fatalf("a waiter got nothing after %v: it slept through visible messages", time.Since(start))
		}
		n += k
	}
	// Each message has its own due time, so a waiter may find only one
	// visible; the rest are still there.
	for n < 2*waiters {
		msgs := mustReceive(t, q, queue.ReceiveOptions{Max: 10, Visibility: time.Minute, Wait: 5 * time.Second})
		if len(msgs) == 0 {
			break
		}
		n += len(msgs)
	}
	if n != 2*waiters {
		t.Fatalf("%d messages delivered, want %d", n, 2*waiters)
	}
}

// waitForWaiters waits until n Receives are parked.
func waitForWaiters(t *testing.T, q *local.Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.Waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d receivers parked", q.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
