package engine

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
)

// deliveryKey carries the id of the queue message being handled.
type deliveryKey struct{}

// WithDelivery tells the work done under ctx which queue message it is
// doing: the id stable across that message's redeliveries (queue.Message's
// ID, SQS's MessageId). A claim records it (runner.Instance.Claim), so a
// redelivery of the same message — its earlier delivery gave up, died, or
// could not record its outcome — knows the work is its own to finish.
func WithDelivery(ctx context.Context, messageID string) context.Context {
	if messageID == "" {
		return ctx
	}
	return context.WithValue(ctx, deliveryKey{}, messageID)
}

// deliveryOf is the message id WithDelivery put on ctx, or "".
func deliveryOf(ctx context.Context) string {
	id, _ := ctx.Value(deliveryKey{}).(string)
	return id
}

// abandonedBy reports whether inst is held in creating or deleting by an
// earlier delivery of the message delivery is: that delivery's visibility
// ran out before it recorded an outcome (a worker bounds its work by the
// visibility, so it is no longer working), and this one takes the work
// over. Any other claim is another message's — a live worker's, or one the
// reconciler's timeouts recover.
func abandonedBy(inst *runner.Instance, delivery string) bool {
	if inst == nil || delivery == "" || inst.Claim != delivery {
		return false
	}
	return inst.Status == runner.StatusCreating || inst.Status == runner.StatusDeleting
}
