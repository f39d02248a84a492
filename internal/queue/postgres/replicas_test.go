package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A receiver blocked in one replica is woken by a message another replica
// sends: the notification crosses processes, so the wait ends well before
// the receiver's own next look (maxSleep, 5 s).
func TestSendInOneReplicaWakesAnother(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	sender, receiver := openQueue(t, dsn, postgres.Options{}), openQueue(t, dsn, postgres.Options{})
	type result struct {
		msgs []queue.Message
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		msgs, err := receiver.Receive(context.Background(), queue.ReceiveOptions{Max: 1, Visibility: time.Minute, Wait: 20 * time.Second})
		done <- result{msgs, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := sender.Send(context.Background(), []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.msgs) != 1 {
		t.Fatalf("Receive = %v, %v", r.msgs, r.err)
	}
	if r.took > 3*time.Second {
		t.Fatalf("the receiver took %v: it was not woken by the other replica's send", r.took)
	}
}

// A message one replica holds stays hidden from the others until its
// visibility timeout, and opening another queue on the table releases
// nothing: a live replica's work is never taken over early.
func TestInFlightMessageStaysWithItsReplica(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewSchema(t)
	first := openQueue(t, dsn, postgres.Options{})
	if err := first.Send(ctx, []byte("work"), 0); err != nil {
		t.Fatal(err)
	}
	held, err := first.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: time.Minute, Wait: time.Second})
	if err != nil || len(held) != 1 {
		t.Fatalf("Receive = %v, %v", held, err)
	}
	second := openQueue(t, dsn, postgres.Options{})
	got, err := second.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: time.Minute, Wait: 500 * time.Millisecond})
	if err != nil || len(got) != 0 {
		t.Fatalf("another replica received %v, %v while the first holds it", got, err)
	}
}

// Queues named apart in one table never see each other's messages.
func TestNamedQueuesAreApart(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewSchema(t)
	a, b := openQueue(t, dsn, postgres.Options{Name: "a"}), openQueue(t, dsn, postgres.Options{Name: "b"})
	if err := a.Send(ctx, []byte("for a"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Receive(ctx, queue.ReceiveOptions{Max: 10, Wait: 200 * time.Millisecond}); err != nil || len(got) != 0 {
		t.Fatalf("queue b received %v, %v", got, err)
	}
	if got, err := a.Receive(ctx, queue.ReceiveOptions{Max: 10, Wait: time.Second}); err != nil || len(got) != 1 {
		t.Fatalf("queue a received %v, %v", got, err)
	}
}

// With Options.Now the queue's own clock decides what is due, for a
// simulation on virtual time.
func TestClockOptionDecidesDueTimes(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openQueue(t, pgtest.NewSchema(t), postgres.Options{Now: clock.Now})
	if err := q.Send(ctx, []byte("later"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1}); err != nil || len(got) != 0 {
		t.Fatalf("before the hour: %v, %v", got, err)
	}
	clock.Advance(time.Hour)
	got, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("after the hour: %v, %v", got, err)
	}
	clock.Advance(time.Minute)
	again, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1})
	if err != nil || len(again) != 1 || again[0].ReceiveCount != 2 {
		t.Fatalf("after the visibility timeout on the queue's clock: %v, %v", again, err)
	}
}

// Close ends a blocked Receive with queue.ErrClosed.
func TestCloseEndsReceive(t *testing.T) {
	q, err := postgres.Open(context.Background(), pgtest.NewSchema(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 1, Wait: 20 * time.Second})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	_ = q.Close()
	select {
	case err := <-done:
		if err != queue.ErrClosed {
			t.Fatalf("Receive after Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the blocked Receive")
	}
}
