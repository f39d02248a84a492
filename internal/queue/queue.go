// Package queue is the port for runfleet's work queue. Adapters (queue/local
// for embedded mode, queue/sqs for AWS) implement Queue and must pass the
// contract suite in queue/queuetest.
package queue

import (
	"context"
	"errors"
	"time"
)

// Message is one delivery of a queued body.
type Message struct {
	// ID is stable across redeliveries of the same sent message.
	ID   string
	Body []byte
	// ReceiveCount is 1 on the first delivery and grows on each redelivery.
	ReceiveCount int
	// Receipt identifies this delivery for Ack; a stale receipt (the message
	// was redelivered since) must not remove the message.
	Receipt string
}

// ReceiveOptions bound one Receive call.
type ReceiveOptions struct {
	// Max messages to return (1..10).
	Max int
	// Visibility: how long received messages stay hidden before they are
	// delivered again unless acknowledged.
	Visibility time.Duration
	// Wait: how long to block for a first message (long polling; no busy loop).
	Wait time.Duration
}

// Queue is an at-least-once work queue with delays, visibility timeouts and
// dead-lettering after a configured number of receives.
type Queue interface {
	// Send enqueues body, invisible until delay has passed. Delays beyond the
	// backend's own maximum must still be honoured, not truncated.
	Send(ctx context.Context, body []byte, delay time.Duration) error
	// Receive returns up to opts.Max visible messages, blocking up to opts.Wait
	// for the first. It returns an empty slice (not an error) on timeout.
	Receive(ctx context.Context, opts ReceiveOptions) ([]Message, error)
	// Ack removes a received message for good.
	Ack(ctx context.Context, m Message) error
}

// DeadLetterer is implemented by queues that can report dead-lettered
// messages (tests, alarms, operator tooling).
type DeadLetterer interface {
	DeadLetters(ctx context.Context) ([]Message, error)
}

// ErrClosed is returned by a queue used after Close.
var ErrClosed = errors.New("queue: closed")
