package sim

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// world is everything one seed simulates: GitHub and the cloud (outside:
// they survive the runfleet process), the process itself, the scheduler
// and the checks.
type world struct {
	cfg Config
	// clock is the run's virtual time, stopped at Epoch to start with. Only
	// the scheduler moves it, between steps; the engine (Options.Now), the
	// store and the queue read it, the DynamoDB run's SDK goroutines too
	// while the scheduler holds it still.
	clock *testclock.Clock
	rng   *rand.Rand
	sched *scheduler
	tr    *trace
	pools runner.Pools
	log   *slog.Logger

	gh    *githubWorld
	cloud *cloud
	// actions is the Actions service of the scale set (nil in a world
	// without one).
	actions *actionsService
	proc    *process
	// newController builds the controller at each start; backend opens the
	// state it starts from.
	newController NewController
	backend       Backend

	// faultsOn is false once the quiescence phase begins.
	faultsOn bool
	// forced names instances an operator force-deleted: their machines may
	// go down under a running job.
	forced map[string]bool

	stats      *Stats
	violations []Violation
	// storeDirty says a store write happened since the last check.
	storeDirty bool

	// firstTrace is the trace as it was at the first violation.
	firstTrace []string
	// broken: the simulation cannot go on (a task panicked or hung).
	broken bool

	startFailures  int
	nextDrainCheck time.Time
	// nextInFlightCheck paces nothingInFlight's reads of the store.
	nextInFlightCheck time.Time
	// inFlight and realPending (real-time backends only) hold, per message
	// received and not acknowledged, when the queue shows it again: while
	// a worker holds it, and once it let go of it.
	inFlight, realPending map[string]time.Time
	// breakerOpened is, per pool, when a store write last opened its spot
	// breaker (spot_breaker.go).
	breakerOpened map[string]time.Time
	// breakerOpenedBy is the process whose write opened it.
	breakerOpenedBy map[string]int
	// procs are the processes not yet buried, by generation; lastGen is
	// the last generation given. shared is the state every replica works
	// on (replicas.go; nil: each process opens its own).
	procs           map[int]*process
	lastGen         int
	shared          *State
	replicasStarted bool
	// meters are the budget states replicas share, per installation.
	meters map[int64]*budget.Memory
	// outage is the seed's store outage, if any (outage.go).
	outage *outage
	// holds names, per instance in creating or deleting, the task at its
	// work; dead, the instances whose work nobody does (deadwork.go).
	holds map[string]held
	dead  map[string]deadWork
	// inHand is, per worker at a create or delete message, the instance
	// the message names.
	inHand map[*task]string
	// takers are the tasks scanning for dead work (liveness.go): their
	// claim writes take it over.
	takers map[*task]bool
	// heldQueue is the real queue delayed messages are handed to when due
	// (real-time backends only): the last one opened.
	heldQueue queue.Queue
}

// Violation is one broken invariant.
type Violation struct {
	At        time.Duration
	Invariant string
	Detail    string
}

func (v Violation) String() string {
	return fmt.Sprintf("[%s] %s: %s", stamp(v.At), v.Invariant, v.Detail)
}

// violate records a broken invariant. The first violation's trace is kept
// for the report; the run goes on (unless Config.StopAtFirst), so that one
// seed can show several distinct failures and the run's figures stay
// whole. Only the first violation of each invariant is kept.
func (w *world) violate(invariant, format string, args ...any) {
	w.violateAbout(nil, invariant, format, args...)
}

// violateAbout is violate for a violation about particular things (a job,
// an instance, a machine): the report then also shows the trace lines that
// mention any of subjects, however long ago they were written.
func (w *world) violateAbout(subjects []string, invariant, format string, args ...any) {
	v := Violation{At: w.clock.Now().Sub(w.tr.start), Invariant: invariant, Detail: fmt.Sprintf(format, args...)}
	w.tr.add("VIOLATION %s: %s", invariant, v.Detail)
	w.stats.inc("violations")
	for _, seen := range w.violations {
		if seen.Invariant == invariant {
			return
		}
	}
	if len(w.violations) == 0 {
		w.firstTrace = w.reportLines(subjects)
	}
	w.violations = append(w.violations, v)
}

// failed reports whether the run must stop: an invariant broke and the
// configuration says to stop there, or the simulation itself broke.
func (w *world) failed() bool { return len(w.violations) > 0 && (w.cfg.StopAtFirst || w.broken) }

func (w *world) now() time.Time { return w.clock.Now() }

// completedAt is the time GitHub gives a job completing now: its
// completed_at has whole seconds.
func (w *world) completedAt() time.Time { return w.now().Truncate(time.Second) }

// reportLines is what a failure report shows: the lines about the subjects
// (half the budget), then the most recent lines.
func (w *world) reportLines(subjects []string) []string {
	n := max(w.cfg.TraceLines, 2)
	about := w.tr.related(subjects, n/2)
	if len(about) == 0 {
		return w.tr.last(n)
	}
	out := append([]string{"--- lines about " + strings.Join(subjects, " | ") + ":"}, about...)
	out = append(out, "--- the last lines:")
	return append(out, w.tr.last(n-len(about))...)
}

// aboutJob are the trace subjects of a job: its events, its ledger key and
// the instances made for it.
func aboutJob(id int64) []string {
	return []string{fmt.Sprintf("job %d ", id), fmt.Sprintf("job %d:", id), fmt.Sprintf("%d#", id), fmt.Sprintf("-%d-", id), fmt.Sprintf("job_id=%d ", id)}
}
