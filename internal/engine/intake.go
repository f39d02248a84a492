package engine

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/runner"
)

// The intake port: how what is learned about a job reaches the ledger.
// Every intake — the webhook, a recovery of failed deliveries, a scale set
// listener — hands the engine the same runner.JobEvent with an EventMeta
// saying where it came from; the engine never knows which intake fed it.

// EventSource names the intake a job event came through.
type EventSource string

// SourceWebhook is a GitHub webhook delivery; its key is the delivery's
// X-GitHub-Delivery id.
const SourceWebhook EventSource = "webhook"

// SourceDeliveryLog is a webhook delivery GitHub failed to make, recovered
// from the App's delivery log (reconcile_deliveries.go); its key is the
// same X-GitHub-Delivery id (GitHub's GUID).
const SourceDeliveryLog EventSource = "delivery_log"

// EventMeta says where a job event came from.
type EventMeta struct {
	// Source is the intake that received the event.
	Source EventSource
	// Key names the event at its source (a webhook's delivery id): the
	// same event received again carries the same key. It is carried to
	// every log line and queue message about the work the event caused,
	// not recorded: events are idempotent by the job they name (see
	// HandleJobEvent), so a key seen before is processed again.
	Key string
}

// Webhook is the EventMeta of the webhook delivery deliveryID.
func Webhook(deliveryID string) EventMeta {
	return EventMeta{Source: SourceWebhook, Key: deliveryID}
}

// logAttrs name the event on a log line: a webhook's (and the engine's
// own work, which has no event) by delivery_id, the key operators search
// GitHub's delivery log by; any other's by source and event_key.
func (m EventMeta) logAttrs() []any {
	switch m.Source {
	case "", SourceWebhook:
		return []any{"delivery_id", m.Key}
	case SourceDeliveryLog:
		return []any{"source", string(m.Source), "delivery_id", m.Key}
	}
	return []any{"source", string(m.Source), "event_key", m.Key}
}

// withEvent is log naming the event m.
func withEvent(log *slog.Logger, m EventMeta) *slog.Logger {
	return log.With(m.logAttrs()...)
}

// JobEventHandler is the intake port: what an intake (the webhook) needs.
type JobEventHandler interface {
	HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta EventMeta) (Outcome, error)
}

var _ JobEventHandler = (*Ledger)(nil)

// HandleJobEvent applies one job event. It is idempotent by the job (its
// id and run attempt) through conditional writes, whatever the event's
// key or source: the same event received twice, through one intake or
// two, ends in the same state as received once — which is what recovers
// an event whose first processing was cut off by a crash.
func (lg *Ledger) HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta EventMeta) (Outcome, error) {
	if ev.RunAttempt < 1 {
		ev.RunAttempt = 1
	}
	log := withEvent(lg.log, meta).With("job_id", ev.JobID, "run_attempt", ev.RunAttempt, "action", string(ev.Action))
	pool, matched := lg.matchPool(ev)
	if matched {
		log = log.With("pool", pool.Name)
	}
	switch ev.Action {
	case runner.ActionQueued:
		if !matched {
			return lg.onUnmatched(ctx, log, meta, ev)
		}
		return lg.onQueued(ctx, log, meta, pool, ev)
	case runner.ActionWaiting:
		return lg.onWaiting(ctx, log, pool, matched, ev)
	case runner.ActionInProgress:
		if !matched {
			if err := lg.settleUnmatched(ctx, ev, runner.JobServed); err != nil {
				return Outcome{Action: string(ev.Action)}, fmt.Errorf("record unmatched job %d served: %w", ev.JobID, err)
			}
		}
		return lg.onInProgress(ctx, log, pool, matched, ev)
	case runner.ActionCompleted:
		if !matched {
			if err := lg.settleUnmatched(ctx, ev, runner.JobClosed); err != nil {
				return Outcome{Action: string(ev.Action)}, fmt.Errorf("record unmatched job %d closed: %w", ev.JobID, err)
			}
		}
		return lg.onCompleted(ctx, log, meta, pool, matched, ev)
	default:
		log.Info("workflow_job action not acted on")
		return Outcome{Action: string(ev.Action), Result: ResultIgnored}, nil
	}
}

// matchPool is the pool a job event is for: the one the intake names
// (a scale set's), else the first whose owner and labels cover the job.
// An event naming a pool this process does not serve is unmatched, as a
// job no pool covers is.
func (lg *Ledger) matchPool(ev runner.JobEvent) (*runner.Pool, bool) {
	if ev.Pool != "" {
		return lg.pools.Get(ev.Pool)
	}
	return lg.pools.Match(ev.Repository, ev.Org, ev.Enterprise, ev.Labels)
}

// newJob is the ledger record for a job event's job in pool, in status.
func (lg *Ledger) newJob(pool *runner.Pool, ev runner.JobEvent, status runner.JobStatus) *runner.Job {
	now := lg.now()
	return &runner.Job{
		ID:              ev.JobID,
		RunAttempt:      ev.RunAttempt,
		Pool:            pool.Name,
		Owner:           pool.Owner,
		Repository:      ev.Repository,
		RunID:           ev.RunID,
		InstallationID:  ev.InstallationID,
		Labels:          append([]string(nil), ev.Labels...),
		Status:          status,
		RunnerName:      ev.RunnerName,
		Conclusion:      ev.Conclusion,
		QueuedAt:        now,
		CreatedAt:       now,
		UpdatedAt:       now,
		StatusChangedAt: now,
		ScaleSetSeq:     ev.Seq,
		AssignedAt:      ev.AssignedAt,
	}
}
