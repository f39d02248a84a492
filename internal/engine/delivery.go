package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// delivery is one delivery of a queue message: its id, stable across
// redeliveries (queue.Message's ID, SQS's MessageId), and which receive of
// it this is (1 on the first).
type delivery struct {
	id      string
	receive int
}

// deliveryKey carries the delivery being handled.
type deliveryKey struct{}

// WithDelivery tells the work done under ctx which queue message it is
// doing and which receive of it (queue.Message's ID and ReceiveCount). A
// claim records it (runner.Instance.Claim), so a later try of the same
// message — the same worker doing it again, or a redelivery after the
// earlier one gave up, died or could not record its outcome — knows the
// work is its own to finish.
func WithDelivery(ctx context.Context, messageID string, receive int) context.Context {
	if messageID == "" {
		return ctx
	}
	return context.WithValue(ctx, deliveryKey{}, delivery{id: messageID, receive: receive})
}

func deliveryOf(ctx context.Context) delivery {
	d, _ := ctx.Value(deliveryKey{}).(delivery)
	return d
}

// claim is what a claim made by d records: the message id and the receive.
func (d delivery) claim() string {
	if d.id == "" {
		return ""
	}
	return d.id + "#" + strconv.Itoa(d.receive)
}

// parseClaim splits a claim into the message id and receive it names
// (the holder after '@', if any, is claimHolder's).
func parseClaim(claim string) delivery {
	claim, _ = splitHolder(claim)
	id, n, ok := strings.Cut(claim, "#")
	if !ok {
		return delivery{}
	}
	receive, err := strconv.Atoi(n)
	if err != nil {
		return delivery{}
	}
	return delivery{id: id, receive: receive}
}

// claimUntil is when the work claimed under ctx has stopped for certain:
// its deadline (a worker's is the message's visibility, a Lambda
// invocation's its timeout less a margin) plus the clean-up grace a
// create's or delete's last steps may run past it, on the engine's clock
// (now). Zero when ctx has no deadline: nothing bounds that work but its
// return, which only the same receive knows of.
func claimUntil(ctx context.Context, now time.Time) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return now.Add(max(time.Until(dl), 0) + cleanupGrace)
}

// takeover is what a delivery may do about an instance held in creating or
// deleting.
type takeover int

const (
	// notOurs: another message's claim (a live worker's, or one the
	// reconciler's timeouts recover), or none: the message is stale.
	notOurs takeover = iota
	// takeOverNow: this message's own claim, whose work has stopped.
	takeOverNow
	// takeOverLater: this message's claim by an earlier receive whose
	// worker may still be finishing (within its claimUntil).
	takeOverLater
)

// decideTakeover decides what delivery d may do about inst at now. Only a
// claim of the same message is its own. The same receive is this worker
// doing the message again after its own try returned: at once. An
// earlier receive's worker stops by the claim's ClaimUntil (the queue
// hands the message on only once that receive's visibility ran out, and
// the worker bounds its work by it): after that, at once; before, later
// — taking over a create whose worker is still in its provider call could
// leave two machines under one name.
func decideTakeover(inst *runner.Instance, d delivery, now time.Time) takeover {
	if inst == nil || d.id == "" || inst.Status != runner.StatusCreating && inst.Status != runner.StatusDeleting {
		return notOurs
	}
	by := parseClaim(inst.Claim)
	switch {
	case by.id != d.id:
		return notOurs
	case by.receive == d.receive:
		return takeOverNow
	case inst.ClaimUntil.IsZero():
		// Work with no deadline may still be running: its end is not
		// known, so the reconciler's timeouts recover it, as before.
		return notOurs
	case !now.Before(inst.ClaimUntil):
		return takeOverNow
	default:
		return takeOverLater
	}
}

// errClaimSettling fails a delivery that found its message's earlier
// receive's claim with that receive's worker perhaps still finishing: the
// delivery is done again shortly (a worker's repeat, Lambda's retrySoon),
// and takes the work over once the claim's bound has passed.
var errClaimSettling = errors.New("an earlier delivery of this message may still be finishing its work")

// takeOver decides, for the message's delivery on ctx, whether to take
// inst's work over now, leave it, or fail for a later try
// (errClaimSettling). Taking it is a conditional write of this delivery's
// claim over the one found (takeClaim): of a redelivery and a scan of dead
// work finding the same claim, one takes it. The instance returned is the
// one taken (nil: not ours, or another took it first).
func (e *Engine) takeOver(ctx context.Context, inst *runner.Instance, what string) (*runner.Instance, error) {
	switch decideTakeover(inst, deliveryOf(ctx), e.now()) {
	case takeOverNow:
		return e.takeClaim(ctx, inst, "redelivery")
	case takeOverLater:
		return nil, fmt.Errorf("%s of %s: %w (until %s)", what, inst.Name, errClaimSettling, inst.ClaimUntil.UTC().Format(time.RFC3339))
	}
	return nil, nil
}
