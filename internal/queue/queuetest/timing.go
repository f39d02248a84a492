package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

func delayHidesUntilDue(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	const delay = 2 * second
	sentBefore := time.Now()
	send(t, q, "delayed", delay)

	requireNothing(t, q, 0, "a delayed message must stay hidden until due")
	m := receiveOne(t, q, longVisibility)
	requireBody(t, m, "delayed")
	// Allow for the backend's clock granularity, not for early delivery.
	if early := delay - time.Since(sentBefore); early > delay/10 {
		t.Fatalf("message delayed %v was delivered %v early", delay, early)
	}
	ack(t, q, m)
}

func visibilityTimeoutRedelivers(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	send(t, q, "unacked", 0)
	first := receiveOne(t, q, second)
	requireNothing(t, q, 0, "a received message must stay hidden for its visibility timeout")

	again := receiveOne(t, q, longVisibility)
	requireBody(t, again, "unacked")
	if again.ID != first.ID {
		t.Fatalf("redelivery has ID %q, want the first delivery's %q", again.ID, first.ID)
	}
	if again.ReceiveCount != first.ReceiveCount+1 {
		t.Fatalf("redelivery ReceiveCount = %d, want %d", again.ReceiveCount, first.ReceiveCount+1)
	}
	if again.Receipt == first.Receipt {
		t.Fatalf("redelivery reuses receipt %q: each delivery needs its own", again.Receipt)
	}
	ack(t, q, again)
}

func staleReceiptDoesNotRemove(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	send(t, q, "stale", 0)
	first := receiveOne(t, q, second)
	redelivered := receiveOne(t, q, second)
	if redelivered.ID != first.ID {
		t.Fatalf("expected a redelivery of %s, got %s", first.ID, redelivered.ID)
	}

	// The stale ack may report an error or not; either way the message stays.
	_ = q.Ack(context.Background(), first)

	third := receiveOne(t, q, longVisibility)
	if third.ID != first.ID || third.ReceiveCount != 3 {
		t.Fatalf("after a stale ack got {id=%s receives=%d}, want {id=%s receives=3}", third.ID, third.ReceiveCount, first.ID)
	}
	ack(t, q, third)
}

func waitReturnsWhenMessageArrives(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	const wait = 20 * second
	type result struct {
		msgs []queue.Message
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		msgs, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 1, Visibility: longVisibility, Wait: wait})
		done <- result{msgs, err, time.Since(start)}
	}()

	// Give the receiver time to block before the message exists.
	time.Sleep(300 * time.Millisecond)
	send(t, q, "wake up", 0)

	r := <-done
	if r.err != nil {
		t.Fatalf("Receive: %v", r.err)
	}
	if len(r.msgs) != 1 {
		t.Fatalf("blocked Receive returned %d messages after %v, want the one sent meanwhile", len(r.msgs), r.took)
	}
	requireBody(t, r.msgs[0], "wake up")
	if r.took > wait/2 {
		t.Fatalf("blocked Receive took %v for a message sent after 300ms: it did not wake on Send", r.took)
	}
	ack(t, q, r.msgs[0])
}

func waitTimesOutEmpty(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	const wait = second
	start := time.Now()
	msgs, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 10, Visibility: longVisibility, Wait: wait})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Receive on an empty queue: %v, want no error", err)
	}
	if len(msgs) != 0 {
		t.Fatalf("Receive on an empty queue returned %s", describe(msgs))
	}
	if took < wait*9/10 {
		t.Fatalf("Receive with Wait %v returned after %v: it did not wait", wait, took)
	}
}

func canceledContextEndsWait(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	const wait = 20 * second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: longVisibility, Wait: wait})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with an expiring context = (%s, %v), want context.DeadlineExceeded", describe(msgs), err)
	}
	if took > wait/2 {
		t.Fatalf("Receive ignored its context: returned after %v", took)
	}
}
