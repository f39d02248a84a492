package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// HandleMessage does the work one queue message asks for. A nil error means
// the message is finished with (acknowledge it) — including work that turned
// out to be stale or already done, and retries the engine re-sent itself with
// a delay. An error matching ErrMalformed can never succeed: log and drop (or
// dead-letter) it. Any other error is transient: leave the message for
// redelivery.
func (e *Engine) HandleMessage(ctx context.Context, body []byte) error {
	msg, err := DecodeMessage(body)
	if err != nil {
		e.log.Error("malformed queue message", "error", err, "body_bytes", len(body))
		return err
	}
	switch msg.Kind {
	case KindCreate:
		return e.create(ctx, msg)
	case KindDelete:
		return e.delete(ctx, msg)
	case KindServeJob:
		return e.serveJob(ctx, msg)
	case KindScaleUp:
		return e.legacyScaleUp(ctx, msg)
	case KindRerunJob:
		return e.rerunJob(ctx, msg)
	}
	return fmt.Errorf("%w: unhandled kind %q", ErrMalformed, msg.Kind)
}

func createMessage(inst *runner.Instance, meta EventMeta) Message {
	return Message{Kind: KindCreate, Instance: inst.Name, JobID: inst.JobID}.withEvent(meta)
}

func deleteMessage(inst *runner.Instance, meta EventMeta, attempt int) Message {
	return Message{Kind: KindDelete, Instance: inst.Name, JobID: inst.JobID, Attempt: attempt}.withEvent(meta)
}

func serveJobMessage(job *runner.Job, meta EventMeta, attempt int) Message {
	return Message{Kind: KindServeJob, JobKey: job.Key(), JobID: job.ID, Attempt: attempt, NotBefore: job.NextAttemptAt}.withEvent(meta)
}

func (lg *Ledger) send(ctx context.Context, msg Message, delay time.Duration) error {
	body, err := EncodeMessage(msg)
	if err != nil {
		return err
	}
	return lg.queue.Send(ctx, body, delay)
}

// getLive reads an instance for a worker; a missing one is stale work.
func (lg *Ledger) getLive(ctx context.Context, name string) (*runner.Instance, error) {
	inst, err := lg.store.GetInstance(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return inst, err
}

// legacyScaleUp handles a job waiting for capacity as a build before the
// job ledger queued it: the job it carries is queued again.
func (e *Engine) legacyScaleUp(ctx context.Context, msg Message) error {
	j := msg.LegacyJob
	ev := runner.JobEvent{
		Action: runner.ActionQueued, JobID: j.ID, RunAttempt: j.RunAttempt, Labels: j.Labels,
		Repository: j.Repository, InstallationID: j.InstallationID,
	}
	pool, ok := e.pool(j.Pool)
	if !ok {
		e.log.Warn("pool no longer configured; queued job of an earlier build dropped", "pool", j.Pool, "job_id", j.ID)
		return nil
	}
	log := withEvent(e.log, msg.event()).With("job_id", j.ID, "pool", j.Pool)
	_, err := e.onQueued(ctx, log, msg.event(), pool, ev)
	return err
}
