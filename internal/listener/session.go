package listener

import (
	"context"
	"errors"
	"fmt"

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
