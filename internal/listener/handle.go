package listener

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// handle puts every event of msg in the ledger, acknowledges msg, then
// records it as the last message. Any failure before the acknowledgement
// leaves msg in the queue: it is delivered again and handled again, which
// the ledger absorbs (it is idempotent by job). A message that repeats one
// already handled (GitHub delivers some twice) is handled the same way.
func (l *Listener) handle(ctx context.Context, sess Session, msg *scaleset.Message, st *state) error {
	log := l.log.With("scale_set_id", sess.ScaleSetID(), "session_id", sess.ID(), "message_id", msg.ID)
	if msg.Malformed != nil {
		// Nothing in it can be read; the statistics check below is what
		// keeps a job it carried from being stranded.
		log.WarnContext(ctx, "scale-set message unreadable; acknowledged without events", "error", msg.Malformed)
	}
	if err := l.acquire(ctx, log, sess, msg); err != nil {
		return err
	}
	meta := engine.EventMeta{Source: SourceScaleSet, Key: KeyOf(sess.ScaleSetID(), msg.ID)}
	for _, ev := range msg.Events {
		if u, ok := ev.(*scaleset.UnknownEvent); ok {
			log.WarnContext(ctx, "scale-set job message of an unknown type; skipped", "type", u.Type, "error", u.Err)
			continue
		}
		jev, ok := jobEvent(l.o.Pool.Name, ev)
		if !ok {
			continue
		}
		out, err := l.o.Intake.HandleJobEvent(ctx, jev, meta)
		if err != nil {
			return fmt.Errorf("job %d (runner request %d) %s: %w", jev.JobID, ev.Job().RunnerRequestID, jev.Action, err)
		}
		log.InfoContext(ctx, "scale-set job message handled", "job_id", jev.JobID, "runner_request_id", ev.Job().RunnerRequestID,
			"action", string(jev.Action), "result", out.Result, "instance", out.Instance)
	}
	if err := sess.DeleteMessage(ctx, msg.ID); err != nil {
		return fmt.Errorf("acknowledge message %d: %w", msg.ID, err)
	}
	st.LastMessageID = max(st.LastMessageID, msg.ID)
	if err := l.state.save(ctx, *st); err != nil {
		// Acknowledged: the queue will not deliver it again; the next
		// save, or a replay from an older id after a crash, covers this.
		log.WarnContext(ctx, "last message id not saved", "error", err)
	}
	l.checkStatistics(ctx, log, &msg.Statistics, sess.ScaleSetID())
	return nil
}

// acquire takes the jobs a message offers (JobAvailable), where the server
// expects it (GHES): JobAssigned follows for those acquired. A job another
// scale set acquired first is simply not assigned to this one.
func (l *Listener) acquire(ctx context.Context, log *slog.Logger, sess Session, msg *scaleset.Message) error {
	var ids []int64
	for _, ev := range msg.Events {
		if a, ok := ev.(*scaleset.JobAvailable); ok && a.RunnerRequestID > 0 {
			ids = append(ids, a.RunnerRequestID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := sess.AcquireJobs(ctx, ids)
	if err != nil {
		return fmt.Errorf("acquire jobs %v: %w", ids, err)
	}
	log.InfoContext(ctx, "scale-set jobs acquired", "offered", len(ids), "acquired", len(got))
	return nil
}
