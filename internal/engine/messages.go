package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// HandleMessage does the work one queue message asks for. A nil error means
// the message is finished with (acknowledge it) — including work that turned
// out to be stale or already done, and retries the engine re-sent itself with
// a delay. An error matching events.ErrMalformed can never succeed: log and
// drop (or dead-letter) it. Any other error is transient: leave the message
// for redelivery.
func (e *Engine) HandleMessage(ctx context.Context, body []byte) error {
	msg, err := events.Decode(body)
	if err != nil {
		e.log.Error("malformed queue message", "error", err, "body_bytes", len(body))
		return err
	}
	switch msg.Kind {
	case events.KindCreate:
		return e.create(ctx, msg)
	case events.KindDelete:
		return e.delete(ctx, msg)
	case events.KindScaleUp:
		log := e.log.With("delivery_id", msg.DeliveryID, "job_id", msg.JobID, "pool", msg.Job.Pool)
		_, err := e.admitJob(ctx, log, msg.DeliveryID, msg.Job, msg.Attempt)
		return err
	}
	return fmt.Errorf("%w: unhandled kind %q", events.ErrMalformed, msg.Kind)
}

func kindCreate(inst *runner.Instance, deliveryID string) events.Message {
	return events.Message{Kind: events.KindCreate, Instance: inst.Name, DeliveryID: deliveryID, JobID: inst.JobID}
}

func kindDelete(inst *runner.Instance, deliveryID string, attempt int) events.Message {
	return events.Message{Kind: events.KindDelete, Instance: inst.Name, DeliveryID: deliveryID, JobID: inst.JobID, Attempt: attempt}
}

func (e *Engine) send(ctx context.Context, msg events.Message, delay time.Duration) error {
	body, err := events.Encode(msg)
	if err != nil {
		return err
	}
	return e.queue.Send(ctx, body, delay)
}

// getLive reads an instance for a worker; a missing one is stale work.
func (e *Engine) getLive(ctx context.Context, name string) (*runner.Instance, error) {
	inst, err := e.store.GetInstance(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return inst, err
}
