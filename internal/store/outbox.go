package store

import "context"

// Outbox is an optional capability of a Store that keeps the work queue in
// its own storage (embedded mode): an instance and the message that creates
// it commit in one write, so a webhook waits for one durable commit instead
// of two, and an instance can never be recorded without its create message.
// Callers find it with a type assertion and fall back to CreateInstance
// followed by a queue send when a Store does not have it (DynamoDB + SQS).
type Outbox interface {
	// CreateInstanceAndSend is CreateInstance, and in the same atomic write
	// enqueues body, visible at once, if and only if the instance was
	// created: with any error nothing is enqueued.
	CreateInstanceAndSend(ctx context.Context, a Admission, body []byte) error
}
