package queuetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
)

func roundTrip(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	send(t, q, `{"kind":"create","instance":"a"}`, 0)

	m := receiveOne(t, q, longVisibility)
	requireBody(t, m, `{"kind":"create","instance":"a"}`)
	if m.ID == "" || m.Receipt == "" {
		t.Fatalf("message has ID %q and receipt %q, want both set", m.ID, m.Receipt)
	}
	if m.ReceiveCount != 1 {
		t.Fatalf("first delivery ReceiveCount = %d, want 1", m.ReceiveCount)
	}
	ack(t, q, m)
}

func binaryBodyRoundTrips(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	body := []byte{0x00, 0xff, 0xfe, 'a', 0x80, '\n', 0x01}
	if err := q.Send(context.Background(), body, 0); err != nil {
		t.Fatalf("Send(binary): %v", err)
	}
	m := receiveOne(t, q, longVisibility)
	if !bytes.Equal(m.Body, body) {
		t.Fatalf("body = %x, want %x", m.Body, body)
	}
	ack(t, q, m)
}

func ackRemovesForGood(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	send(t, q, "acked", 0)
	m := receiveOne(t, q, second)
	ack(t, q, m)

	// Had the ack not removed it, the message would be back after its
	// one-second visibility timeout.
	requireNothing(t, q, 2*second+second/2, "an acknowledged message must never come back")

	// Acknowledging twice is harmless: workers may retry an ack.
	if err := q.Ack(context.Background(), m); err != nil {
		t.Fatalf("second Ack of the same delivery: %v", err)
	}
}

func maxIsRespected(t *testing.T, newQueue NewQueue) {
	q := newQueue(t, Options{})
	want := map[string]bool{}
	for _, body := range []string{"m1", "m2", "m3", "m4", "m5"} {
		send(t, q, body, 0)
		want[body] = true
	}

	got := map[string]bool{}
	for len(got) < len(want) {
		msgs := receive(t, q, queue.ReceiveOptions{Max: 2, Visibility: longVisibility, Wait: patience})
		if len(msgs) == 0 {
			t.Fatalf("received %d of %d messages, then nothing within %v", len(got), len(want), patience)
		}
		if len(msgs) > 2 {
			t.Fatalf("Receive with Max 2 returned %d messages: %s", len(msgs), describe(msgs))
		}
		for _, m := range msgs {
			got[string(m.Body)] = true
			ack(t, q, m)
		}
	}
	for body := range want {
		if !got[body] {
			t.Fatalf("message %q never delivered", body)
		}
	}
}
