package queuetest

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
)

func deadLetterAfterMaxReceives(t *testing.T, newQueue NewQueue) {
	const maxReceives = 2
	q := newQueue(t, Options{MaxReceives: maxReceives})
	send(t, q, "poison", 0)

	var last queue.Message
	for i := 1; i <= maxReceives; i++ {
		last = receiveOne(t, q, second)
		if last.ReceiveCount != i {
			t.Fatalf("delivery %d has ReceiveCount %d", i, last.ReceiveCount)
		}
	}
	// Visible again after a second, but it has used up its receives.
	requireNothing(t, q, 2*second+second/2, "a message received MaxReceives times must be dead-lettered, not delivered again")

	dl, ok := q.(queue.DeadLetterer)
	if !ok {
		return
	}
	dead, err := dl.DeadLetters(context.Background())
	if err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	if len(dead) != 1 {
		t.Fatalf("DeadLetters = %s, want the one poisoned message", describe(dead))
	}
	if dead[0].ID != last.ID {
		t.Fatalf("dead letter has ID %q, want %q", dead[0].ID, last.ID)
	}
	requireBody(t, dead[0], "poison")
	if dead[0].ReceiveCount < maxReceives {
		t.Fatalf("dead letter ReceiveCount = %d, want at least %d", dead[0].ReceiveCount, maxReceives)
	}
}
