package listener

import (
	"context"
	"log/slog"
	"sync"

	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// Demand compares what GitHub says the scale set has waiting for a runner
// with what the ledger has open for the pool, as of the last message.
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

// statsView keeps the last Demand for Demand().
type statsView struct {
	mu   sync.Mutex
	last Demand
	seen bool
}

// Demand is the comparison made at the last message, and whether one was
// made yet.
func (l *Listener) Demand() (Demand, bool) {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	return l.stats.last, l.stats.seen
}

// checkStatistics compares GitHub's statistics with the ledger after a
// message's events are in it, and says so when they disagree. It only
// reports: acting on a difference (opening demand GitHub has and the
// ledger lacks, closing waiting jobs GitHub no longer has) is the next
// step, and needs the ledger to say which jobs the difference is.
func (l *Listener) checkStatistics(ctx context.Context, log *slog.Logger, s scaleset.Statistics) {
	jobs, err := l.o.Store.ListOpenJobs(ctx)
	if err != nil {
		log.WarnContext(ctx, "open jobs unreadable; statistics not compared", "error", err)
		return
	}
	d := Demand{Assigned: s.TotalAssignedJobs, Running: s.TotalRunningJobs}
	for _, j := range jobs {
		if _, ours := RunnerRequestID(j.ID); ours && j.Pool == l.o.Pool.Name {
			d.Open++
		}
	}
	l.stats.mu.Lock()
	l.stats.last, l.stats.seen = d, true
	l.stats.mu.Unlock()
	if d.Missing() != 0 {
		log.InfoContext(ctx, "GitHub's statistics and the ledger disagree on the scale set's waiting jobs",
			"total_assigned_jobs", d.Assigned, "total_running_jobs", d.Running, "ledger_open_jobs", d.Open, "missing", d.Missing())
	}
}
