package listener

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// Demand compares what GitHub says the scale set has waiting for a runner
// with what the ledger has open for the pool.
type Demand struct {
	// Assigned is GitHub's totalAssignedJobs, Running its
	// totalRunningJobs: Assigned-Running jobs wait for a runner.
	Assigned, Running int
	// Open is the pool's scale-set jobs the ledger holds open or waiting
	// (a canceled assignment GitHub may assign again).
	Open int
}

// Missing is how many jobs GitHub has waiting that the ledger does not:
// a message lost or unreadable. Negative: the ledger holds jobs GitHub no
// longer has waiting (canceled while queued, or a message not yet read).
func (d Demand) Missing() int { return d.Assigned - d.Running - d.Open }

// statsView keeps the last comparison, and since when the ledger has held
// more than GitHub counts.
type statsView struct {
	mu     sync.Mutex
	last   Demand
	seen   bool
	latest scaleset.Statistics // GitHub's last word: the last message's, or the session's
	heard  bool                // latest holds GitHub's word
	excess time.Time           // zero while the ledger holds no more than GitHub
}

// Demand is the comparison made last, and whether one was made yet.
func (l *Listener) Demand() (Demand, bool) {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	return l.stats.last, l.stats.seen
}

// checkStatistics compares GitHub's statistics with the ledger once a
// message's events are in it (s from that message), or once the queue is
// empty (s nil: the last message's statistics, which no later event has
// changed), and says so when they disagree.
//
// A job GitHub no longer has waiting stays waiting in the ledger when it
// was canceled before any runner took it (see jobEvent): that is the one
// difference acted on. Once the ledger has held more than GitHub counts
// for StatsGrace without a break — longer than a message in flight takes —
// the jobs that have been waiting that long too, oldest first, are closed
// through the intake, as many as the excess. (Not only those waiting
// since before the stretch began: a job canceled during another one's
// excess keeps the stretch going itself, and would never be closed — F23.)
// An open job is never closed here: its demand is the engine's, and
// GitHub's count may lag.
func (l *Listener) checkStatistics(ctx context.Context, log *slog.Logger, s *scaleset.Statistics, scaleSetID int64) {
	l.stats.mu.Lock()
	if s != nil {
		l.stats.latest, l.stats.heard = *s, true
	} else if !l.stats.heard {
		l.stats.mu.Unlock()
		return // nothing heard from GitHub yet
	}
	latest := l.stats.latest
	l.stats.mu.Unlock()

	jobs, err := l.o.Store.ListOpenJobs(ctx)
	if err != nil {
		log.WarnContext(ctx, "open jobs unreadable; statistics not compared", "error", err)
		return
	}
	d := Demand{Assigned: latest.TotalAssignedJobs, Running: latest.TotalRunningJobs}
	var waiting []*runner.Job
	for _, j := range jobs {
		if _, ours := runner.RunnerRequestID(j.ID); !ours || j.Pool != l.o.Pool.Name {
			continue
		}
		d.Open++
		if j.Status == runner.JobWaiting {
			waiting = append(waiting, j)
		}
	}
	now := l.o.Runtime.Now()
	l.stats.mu.Lock()
	changed := !l.stats.seen || l.stats.last != d
	l.stats.last, l.stats.seen = d, true
	switch {
	case d.Missing() >= 0:
		l.stats.excess = time.Time{}
	case l.stats.excess.IsZero():
		l.stats.excess = now
	}
	since := l.stats.excess
	l.stats.mu.Unlock()
	if changed && d.Missing() != 0 {
		log.InfoContext(ctx, "GitHub's statistics and the ledger disagree on the scale set's waiting jobs",
			"total_assigned_jobs", d.Assigned, "total_running_jobs", d.Running, "ledger_open_jobs", d.Open, "missing", d.Missing())
	}
	if since.IsZero() || now.Sub(since) < l.o.StatsGrace {
		return
	}
	l.closeCanceled(ctx, log, waiting, -d.Missing(), now.Add(-l.o.StatsGrace), scaleSetID)
}

// closeCanceled closes up to n of the waiting jobs that were waiting
// before since, oldest first: GitHub canceled them for good.
func (l *Listener) closeCanceled(ctx context.Context, log *slog.Logger, waiting []*runner.Job, n int, since time.Time, scaleSetID int64) {
	slices.SortFunc(waiting, func(a, b *runner.Job) int { return a.StatusChangedAt.Compare(b.StatusChangedAt) })
	for _, j := range waiting {
		if n == 0 || !j.StatusChangedAt.Before(since) {
			return
		}
		rr, _ := runner.RunnerRequestID(j.ID)
		ev := runner.JobEvent{Action: runner.ActionCompleted, JobID: j.ID, RunAttempt: j.RunAttempt, Pool: l.o.Pool.Name, Conclusion: "cancelled"}
		meta := engine.EventMeta{Source: SourceScaleSet, Key: fmt.Sprintf("scaleset:%d:statistics:%d", scaleSetID, rr)}
		if _, err := l.o.Intake.HandleJobEvent(ctx, ev, meta); err != nil {
			log.WarnContext(ctx, "closing a job GitHub no longer has waiting failed", "job_id", j.ID, "runner_request_id", rr, "error", err)
			return
		}
		log.InfoContext(ctx, "job closed: canceled before any runner took it, and GitHub no longer counts it",
			"job_id", j.ID, "runner_request_id", rr, "waiting_since", j.StatusChangedAt)
		n--
	}
}

// heardFromSession takes GitHub's statistics from a session just opened or
// resumed, so that a listener that reads no message (a quiet queue, or a
// Lambda invocation that started moments ago) still compares on its empty
// polls. They are consistent with the ledger by then: every message the
// queue held when the session opened is read, and replaces them, before
// the first empty poll.
func (l *Listener) heardFromSession(sess Session) {
	if !sess.HasStatistics() {
		return
	}
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	l.stats.latest, l.stats.heard = sess.Statistics(), true
}
