package listener

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// scaleSetLabels are the scale set's labels: the pool's, and the
// controller's ownership label (see Options.ControllerID).
func (l *Listener) scaleSetLabels() []string {
	labels := append([]string(nil), l.o.Pool.Labels...)
	if own := runner.ControllerLabel(l.o.ControllerID); own != "" {
		labels = append(labels, own)
	}
	return labels
}

// open returns a message session for the pool's scale set: the stored one
// resumed when GitHub still has it, else a new one. The scale set is
// ensured first (GitHub deletes idle ones). A new scale set has a new
// queue, so lastMessageId starts over with it. The state is saved before
// the session is used, so a successor after a crash resumes this session
// rather than waiting for it to expire.
//
// A 409 (another session holds the scale set: a live replica, or a
// crashed listener's session this one has no id of) is returned like any
// failure; the caller waits and tries again, and GitHub expires a dead
// session in time.
func (l *Listener) open(ctx context.Context, st *state) (Session, error) {
	set, err := l.o.Client.EnsureScaleSet(ctx, l.o.RunnerGroup, scaleset.ScaleSetSpec{Name: l.o.ScaleSet, Labels: l.scaleSetLabels()})
	if err != nil {
		return nil, fmt.Errorf("ensure scale set: %w", err)
	}
	if set.ID != st.ScaleSetID {
		if st.ScaleSetID != 0 {
			l.log.WarnContext(ctx, "the scale set is a new one; its queue starts over", "scale_set_id", set.ID, "was", st.ScaleSetID)
			if err := l.pauseOrphans(ctx, st.ScaleSetID); err != nil {
				return nil, err
			}
		}
		*st = state{ScaleSetID: set.ID}
	}
	log := l.log.With("scale_set_id", set.ID)
	if st.SessionID != "" {
		sess, err := l.o.Client.ResumeSession(ctx, set.ID, st.SessionID)
		switch {
		case err == nil:
			log.InfoContext(ctx, "message session resumed", "session_id", sess.ID(), "last_message_id", st.LastMessageID)
			return sess, nil
		case errors.Is(err, scaleset.ErrSessionNotFound), errors.Is(err, scaleset.ErrSessionExpired),
			errors.Is(err, scaleset.ErrQueueTokenExpired), errors.Is(err, scaleset.ErrBadResponse):
			log.InfoContext(ctx, "stored message session is gone; opening a new one", "session_id", st.SessionID, "error", err)
			st.SessionID = ""
		case errors.Is(err, scaleset.ErrScaleSetNotFound):
			st.SessionID = "" // the next open ensures it again
			return nil, fmt.Errorf("resume session: %w", err)
		default:
			return nil, fmt.Errorf("resume session %s: %w", st.SessionID, err)
		}
	}
	sess, err := l.o.Client.CreateSession(ctx, set.ID, l.o.Holder)
	if err != nil {
		if errors.Is(err, scaleset.ErrSessionConflict) {
			return nil, fmt.Errorf("another message session holds the scale set (a live replica, or a dead listener's session GitHub has not expired yet): %w", err)
		}
		return nil, fmt.Errorf("create session: %w", err)
	}
	st.SessionID = sess.ID()
	if err := l.state.save(ctx, *st); err != nil {
		// Not saved: a crash now would leave a session no successor can
		// resume. Delete it and try again, rather than hold one unsaved.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.o.CloseTimeout)
		defer cancel()
		_ = sess.Close(closeCtx)
		st.SessionID = ""
		return nil, err
	}
	log.InfoContext(ctx, "message session created", "session_id", sess.ID(), "last_message_id", st.LastMessageID)
	return sess, nil
}

// pauseOrphans records the pool's open scale-set jobs as waiting when the
// scale set is a new one (F25). GitHub deleted the old one with its queue,
// which may have held a job's JobStarted or JobCompleted that the new
// queue never repeats: left open, such a job would get runner after
// runner. Paused, a job GitHub assigns to the new scale set is reopened
// by its JobAssigned there (read after this: the state naming the new
// scale set is saved before any message of its queue is), and one it
// does not is closed by the statistics check once its grace has passed,
// as a job canceled while queued is. It runs again after a crash before
// that save, which changes nothing for a job already waiting.
func (l *Listener) pauseOrphans(ctx context.Context, oldScaleSetID int64) error {
	jobs, err := l.o.Store.ListOpenJobs(ctx)
	if err != nil {
		return fmt.Errorf("list the old scale set's open jobs: %w", err)
	}
	for _, j := range jobs {
		rr, ours := runner.RunnerRequestID(j.ID)
		if !ours || j.Pool != l.o.Pool.Name || j.Status != runner.JobOpen {
			continue
		}
		ev := runner.JobEvent{Action: runner.ActionWaiting, JobID: j.ID, RunAttempt: j.RunAttempt, Pool: l.o.Pool.Name}
		meta := engine.EventMeta{Source: SourceScaleSet, Key: fmt.Sprintf("scaleset:%d:gone:%d", oldScaleSetID, rr)}
		if _, err := l.o.Intake.HandleJobEvent(ctx, ev, meta); err != nil {
			return fmt.Errorf("pause job %d (runner request %d) of the deleted scale set %d: %w", j.ID, rr, oldScaleSetID, err)
		}
		l.log.InfoContext(ctx, "job of the deleted scale set paused until GitHub assigns it again", "job_id", j.ID, "runner_request_id", rr, "was", oldScaleSetID)
	}
	return nil
}
