package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/queue/queuetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T, opts queuetest.Options) queue.Queue {
		return openQueue(t, filepath.Join(t.TempDir(), "queue.db"), local.Options{MaxReceives: opts.MaxReceives})
	}, queuetest.StaleReceiptKeepsMessage)
}

func openQueue(t *testing.T, path string, opts local.Options) *local.Queue {
	t.Helper()
	q, err := local.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return q
}

func mustReceive(t *testing.T, q *local.Queue, opts queue.ReceiveOptions) []queue.Message {
	t.Helper()
	msgs, err := q.Receive(context.Background(), opts)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return msgs
}

func mustSend(t *testing.T, q *local.Queue, body string, delay time.Duration) {
	t.Helper()
	if err := q.Send(context.Background(), []byte(body), delay); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

func TestUnackedMessageIsRedeliveredAfterRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := local.Open(path, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, q, "survivor", 0)
	first := mustReceive(t, q, queue.ReceiveOptions{Max: 1, Visibility: time.Hour})
	if len(first) != 1 {
		t.Fatalf("Receive before restart got %d messages", len(first))
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	// Its hour-long visibility timeout belonged to a receiver that is gone.
	q = openQueue(t, path, local.Options{})
	again := mustReceive(t, q, queue.ReceiveOptions{Max: 10, Visibility: time.Hour})
	if len(again) != 1 {
		t.Fatalf("Receive after restart got %d messages, want the unacknowledged one", len(again))
	}
	if again[0].ID != first[0].ID || string(again[0].Body) != "survivor" || again[0].ReceiveCount != 2 {
		t.Fatalf("after restart got {id=%s body=%q receives=%d}, want {id=%s body=survivor receives=2}",
			again[0].ID, again[0].Body, again[0].ReceiveCount, first[0].ID)
	}
	// The receipt issued before the restart is stale now.
	if err := q.Ack(context.Background(), first[0]); err != nil {
		t.Fatalf("stale Ack: %v", err)
	}
	if err := q.Ack(context.Background(), again[0]); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if msgs := mustReceive(t, q, queue.ReceiveOptions{}); len(msgs) != 0 {
		t.Fatalf("acknowledged message still queued: %+v", msgs)
	}
}

func TestDelayAndDeadLettersSurviveRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	opts := local.Options{MaxReceives: 1}
	q, err := local.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, q, "poison", 0)
	mustSend(t, q, "later", time.Second)
	if got := mustReceive(t, q, queue.ReceiveOptions{Max: 10, Visibility: time.Hour}); len(got) != 1 || string(got[0].Body) != "poison" {
		t.Fatalf("first Receive = %+v, want only the undelayed message", got)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = openQueue(t, path, opts)
	// "poison" is visible again after the restart but was received once
	// already: it goes to the dead letters. "later" is not due yet.
	if got := mustReceive(t, q, queue.ReceiveOptions{Max: 10}); len(got) != 0 {
		t.Fatalf("Receive right after restart = %+v, want nothing", got)
	}
	dead, err := q.DeadLetters(context.Background())
	if err != nil || len(dead) != 1 || string(dead[0].Body) != "poison" {
		t.Fatalf("DeadLetters = %+v, %v; want the poison message", dead, err)
	}
	got := mustReceive(t, q, queue.ReceiveOptions{Max: 10, Wait: 10 * time.Second})
	if len(got) != 1 || string(got[0].Body) != "later" || got[0].ReceiveCount != 1 {
		t.Fatalf("Receive waiting for the delayed message = %+v", got)
	}
}

func TestCloseEndsBlockedReceive(t *testing.T) {
	t.Parallel()
	q, err := local.Open(filepath.Join(t.TempDir(), "queue.db"), local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.Receive(context.Background(), queue.ReceiveOptions{Wait: time.Minute})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("blocked Receive after Close = %v, want queue.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a blocked Receive")
	}
	if err := q.Send(context.Background(), []byte("x"), 0); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Send after Close = %v, want queue.ErrClosed", err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestFileIsLockedToOneQueue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	openQueue(t, path, local.Options{})
	if q, err := local.Open(path, local.Options{OpenTimeout: 50 * time.Millisecond}); err == nil {
		_ = q.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
}

func TestRejectsBadInput(t *testing.T) {
	t.Parallel()
	q := openQueue(t, filepath.Join(t.TempDir(), "queue.db"), local.Options{})
	err := q.Ack(context.Background(), queue.Message{ID: "1", Receipt: "not-a-receipt"})
	if !errors.Is(err, local.ErrInvalidReceipt) {
		t.Fatalf("Ack with a foreign receipt = %v, want ErrInvalidReceipt", err)
	}
	if _, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 11}); err == nil {
		t.Fatal("Receive with Max 11 succeeded, want an error")
	}
	if _, err := local.Open(filepath.Join(t.TempDir(), "other.db"), local.Options{MaxReceives: -1}); err == nil {
		t.Fatal("Open with negative MaxReceives succeeded")
	}
}
