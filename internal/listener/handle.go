package listener

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
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
	// A message at or below the last one acknowledged is a copy the
	// broker delivered again: its jobs were acquired when it was first
	// handled (acquire comes before the acknowledgement), and asking
	// again for one GitHub has finished since is a call for nothing.
	if acked := st.ScaleSetID == sess.ScaleSetID() && msg.ID <= st.LastMessageID; acked {
		log.InfoContext(ctx, "scale-set message delivered again after its acknowledgement; its jobs are not acquired again",
			"last_message_id", st.LastMessageID)
	} else if err := l.acquire(ctx, log, sess, msg); err != nil {
		return err
	}
	meta := engine.EventMeta{Source: SourceScaleSet, Key: KeyOf(sess.ScaleSetID(), msg.ID)}
	at := runner.MessageSeq{ScaleSetID: sess.ScaleSetID(), MessageID: msg.ID}
	if err := l.feed(ctx, log, meta, at, msg.Events); err != nil {
		return err
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

// DefaultFeedParallel is Options.FeedParallel's default: how many of a
// message's jobs are fed to the ledger at once. Each event is a durable write of its own; one after the other,
// each waits for a flush of its own, while writes side by side share one
// (the stores' group commit), as concurrent webhooks' do. A message holds
// up to 50 events (GitHub's batch); the webhook intake sees 16 concurrent
// deliveries in the benchmarks, and so many writers are what the store's
// batching was measured with.
const DefaultFeedParallel = 16

// feed hands the job events of one message to the ledger: the events of
// one job (one runnerRequestId) in the message's order, one after the
// other, since a job's later event must find its earlier one applied;
// different jobs' events side by side, as their webhooks would arrive.
// Every event is tried; the first failure is returned, so the message is
// not acknowledged and comes again, and the ledger absorbs what was
// applied (it is idempotent by job).
//
// at is the message's place in its scale set's queue; each event is
// handed to the ledger with its own index in the message added, which is
// how the ledger tells a copy delivered late from news.
func (l *Listener) feed(ctx context.Context, log *slog.Logger, meta engine.EventMeta, at runner.MessageSeq, events []scaleset.Event) error {
	parallel := cmp.Or(l.o.FeedParallel, DefaultFeedParallel)
	if parallel == 1 {
		// In the caller's goroutine: the simulation runs every port call
		// of the listener in its own task, and a goroutine it did not
		// start would run outside its schedule.
		var first error
		for _, group := range byJob(events) {
			for _, i := range group {
				if err := l.feedOne(ctx, log, meta, placed(at, i), events[i]); err != nil {
					first = cmp.Or(first, err)
					break // this job's later events wait for the message to come again
				}
			}
		}
		return first
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		slots = make(chan struct{}, parallel)
	)
	for _, group := range byJob(events) {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, i := range group {
				if err := l.feedOne(ctx, log, meta, placed(at, i), events[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return // this job's later events wait for the message to come again
				}
			}
		})
	}
	wg.Wait()
	return first
}

// byJob groups the indexes of events by runnerRequestId, each group in
// the message's order, the groups in the order of their first event.
func byJob(events []scaleset.Event) [][]int {
	var groups [][]int
	at := map[int64]int{}
	for i, ev := range events {
		id := ev.Job().RunnerRequestID
		g, ok := at[id]
		if !ok {
			g = len(groups)
			at[id] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// placed is the place of a message's index-th event: the message's, at.
func placed(at runner.MessageSeq, index int) runner.MessageSeq {
	if at.IsZero() {
		return at
	}
	at.Index = index
	return at
}

// feedOne hands one event to the ledger; an event the ledger does not act
// on is skipped.
func (l *Listener) feedOne(ctx context.Context, log *slog.Logger, meta engine.EventMeta, seq runner.MessageSeq, ev scaleset.Event) error {
	if u, ok := ev.(*scaleset.UnknownEvent); ok {
		log.WarnContext(ctx, "scale-set job message of an unknown type; skipped", "type", u.Type, "error", u.Err)
		return nil
	}
	jev, ok := jobEvent(l.o.Pool.Name, ev)
	if !ok {
		return nil
	}
	jev.Seq = seq
	out, err := l.o.Intake.HandleJobEvent(ctx, jev, meta)
	if err != nil {
		return fmt.Errorf("job %d (runner request %d) %s: %w", jev.JobID, ev.Job().RunnerRequestID, jev.Action, err)
	}
	log.InfoContext(ctx, "scale-set job message handled", "job_id", jev.JobID, "runner_request_id", ev.Job().RunnerRequestID,
		"action", string(jev.Action), "result", out.Result, "reason", out.Reason, "instance", out.Instance, "event_index", seq.Index)
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
