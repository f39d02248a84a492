package queuetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

const (
	// second is the shortest visibility or delay every backend honours: SQS
	// counts both in whole seconds.
	second = time.Second
	// patience bounds a wait for something that must happen soon; tests
	// return as soon as it does, so only a failing test waits this long.
	patience = 10 * time.Second
	// longVisibility keeps a received message hidden for the whole test.
	longVisibility = 60 * time.Second
)

func send(t *testing.T, q queue.Queue, body string, delay time.Duration) {
	t.Helper()
	if err := q.Send(context.Background(), []byte(body), delay); err != nil {
		t.Fatalf("Send(%q, %v): %v", body, delay, err)
	}
}

func receive(t *testing.T, q queue.Queue, opts queue.ReceiveOptions) []queue.Message {
	t.Helper()
	msgs, err := q.Receive(context.Background(), opts)
	if err != nil {
		t.Fatalf("Receive(%+v): %v", opts, err)
	}
	return msgs
}

// receiveOne waits up to patience for exactly one message.
func receiveOne(t *testing.T, q queue.Queue, visibility time.Duration) queue.Message {
	t.Helper()
	msgs := receive(t, q, queue.ReceiveOptions{Max: 1, Visibility: visibility, Wait: patience})
	if len(msgs) != 1 {
		t.Fatalf("Receive returned %d messages within %v, want 1", len(msgs), patience)
	}
	return msgs[0]
}

func requireNothing(t *testing.T, q queue.Queue, wait time.Duration, why string) {
	t.Helper()
	if msgs := receive(t, q, queue.ReceiveOptions{Max: 10, Visibility: longVisibility, Wait: wait}); len(msgs) != 0 {
		t.Fatalf("%s, but Receive returned %s", why, describe(msgs))
	}
}

func ack(t *testing.T, q queue.Queue, m queue.Message) {
	t.Helper()
	if err := q.Ack(context.Background(), m); err != nil {
		t.Fatalf("Ack(%s): %v", m.ID, err)
	}
}

func requireBody(t *testing.T, m queue.Message, want string) {
	t.Helper()
	if !bytes.Equal(m.Body, []byte(want)) {
		t.Fatalf("message %s body = %q, want %q", m.ID, m.Body, want)
	}
}

func describe(msgs []queue.Message) string {
	var b bytes.Buffer
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{id=%s body=%q receives=%d}", m.ID, m.Body, m.ReceiveCount)
	}
	return "[" + b.String() + "]"
}
