package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// githubWorld is GitHub as it behaves, not as the engine would like it to:
// it hands a queued job to ANY idle online runner whose labels cover the
// job's (not to the runner made for it), takes a job back if the runner
// does not start it within a minute, cancels a job queued for 24 hours,
// lets an ephemeral runner run one job and deregister, and tells runfleet
// about all of it only through workflow_job webhooks (webhooks.go) and its
// REST API (github_api.go).
type githubWorld struct {
	w *world
	// jobs in creation order; jobByID indexes them.
	jobs    []*ghJob
	jobByID map[int64]*ghJob
	// runners in registration order (ids ascend).
	runners  []*ghRunner
	byID     map[int64]*ghRunner
	nextID   int64
	assignAt bool
	// callsByJob counts the GitHub calls spent on each job (budget.go).
	callsByJob map[int64]int
	// deliveries is GitHub's webhook delivery log (github_deliveries.go).
	deliveries []*deliveryAttempt
	// deliveriesInFlight counts webhook deliveries sent that have not
	// reached runfleet yet (a redelivery may land up to an hour after its
	// event): the world is not drained while one is on its way.
	deliveriesInFlight int
	// lastJobID is the highest job id handed out: a re-run's new job gets
	// the next.
	lastJobID int64
	// limits are GitHub's secondary limits, one per installation
	// (github_limit.go).
	limits map[int64]*secondaryLimit
	// heldJIT names the instances whose JIT registration runfleet's budget
	// or GitHub's limit held back, by the task that made the call
	// (checkBudgetWait).
	heldJIT map[string]string
	// waiting are the creates waiting for the budget (checkOldestFirst).
	waiting map[string]budgetWait
}

// GitHub's job statuses as the REST API and webhooks name them.
const (
	jobQueued     = "queued"
	jobWaiting    = "waiting"
	jobInProgress = "in_progress"
	jobCompleted  = "completed"
)

const (
	// pickupLimit: a job handed to a runner that does not start it goes
	// back to the queue after this long.
	pickupLimit = 60 * time.Second
	// lostRunnerTimeout: a runner whose machine vanished mid-job looks busy
	// this long, then GitHub fails the job and shows the runner offline.
	lostRunnerTimeout = 10 * time.Minute
	org               = "acme"
)

type ghJob struct {
	ID, RunID int64
	// RunAttempt is the run's attempt this job belongs to: 1, or more for
	// a re-run (github_rerun.go), which is a new job with a new id.
	RunAttempt int64
	Repo, Org  string
	Labels     []string
	Pool       string // the pool runfleet should serve it from; "" if none
	Status     string
	Conclusion string
	QueuedAt   time.Time
	// CompletedAt is when the job completed, to the second, as GitHub's
	// completed_at says.
	CompletedAt time.Time
	// assigned is the runner GitHub handed the queued job to, until it
	// starts it; runner is the one that ran it.
	assigned   *ghRunner
	assignedAt time.Time
	runner     *ghRunner
	events     []*jobEvent
	// lost says the job failed because its machine vanished under it;
	// interrupted, that the cloud took that machine back (spot): such a
	// job is owed one re-run.
	lost, interrupted bool
	// rerunsAccepted counts the re-runs of this job GitHub accepted;
	// rerunOf, on a re-run's attempt, is the job it re-ran.
	rerunsAccepted int
	rerunOf        *ghJob
	// ss is set for a job that targets the scale set (actions_world.go).
	ss *ssJob
	// finishHeard is when runfleet acknowledged GitHub's news that the
	// job finished (its completed webhook answered 2xx, or the scale-set
	// message carrying its final JobCompleted acknowledged): from then on
	// runfleet must make no machine for it (checkMadeForFinished).
	finishHeard time.Time
}

// jobEvent is one workflow_job event GitHub emitted for a job, in order.
type jobEvent struct {
	seq      int
	action   runner.JobAction
	accepted bool
}

type ghRunner struct {
	ID     int64
	Name   string
	Owner  string
	Labels []string
	// foreign runners were not registered by this runfleet (a static
	// machine, another installation): runfleet must never remove them.
	foreign    bool
	ephemeral  bool
	registered bool
	online     bool
	// job is assigned to, or running on, the runner.
	job *ghJob
	// machine is the machine the runner process runs on, once it booted.
	machine *machine
	// set is the scale set the runner was registered in; nil for a
	// runner registered through the REST API.
	set *ssScaleSet
}

func (r *ghRunner) busy() bool { return r.job != nil }

func (r *ghRunner) running() bool {
	return r.job != nil && r.job.runner == r && r.job.Status == jobInProgress
}

func newGitHubWorld(w *world) *githubWorld {
	return &githubWorld{w: w, jobByID: map[int64]*ghJob{}, byID: map[int64]*ghRunner{}, nextID: 100,
		limits: map[int64]*secondaryLimit{}}
}

// register adds a runner registration (offline until a machine starts it).
func (g *githubWorld) register(name, owner string, labels []string, foreign, ephemeral bool) *ghRunner {
	g.nextID++
	r := &ghRunner{ID: g.nextID, Name: name, Owner: owner, Labels: slices.Clone(labels), foreign: foreign, ephemeral: ephemeral, registered: true}
	g.runners = append(g.runners, r)
	g.byID[r.ID] = r
	return r
}

// registeredByName is the registration a name currently refers to.
func (g *githubWorld) registeredByName(name string) *ghRunner {
	for i := len(g.runners) - 1; i >= 0; i-- {
		if r := g.runners[i]; r.registered && r.Name == name {
			return r
		}
	}
	return nil
}

// deregister removes a registration; a job assigned but not started goes
// back to the queue at once.
func (g *githubWorld) deregister(r *ghRunner) {
	r.registered, r.online = false, false
	if j := r.job; j != nil && j.assigned == r {
		j.assigned, r.job = nil, nil
		g.assignSoon()
	}
}

// queueJob is a new job's arrival.
func (g *githubWorld) queueJob(j *ghJob) {
	w := g.w
	j.Status, j.QueuedAt = jobQueued, w.now()
	g.jobs = append(g.jobs, j)
	g.jobByID[j.ID] = j
	w.stats.inc("jobs.queued")
	if j.Pool == "" {
		w.stats.inc("jobs.unservable")
	}
	w.tr.add("github: job %d queued labels=%v pool=%q", j.ID, j.Labels, j.Pool)
	g.emit(j, runner.ActionQueued)
	g.assignSoon()
	// A scale set's job is not held for approval here: an environment's
	// approval comes before GitHub assigns it to the scale set at all.
	if j.ss == nil && w.faultsOn && chance(w.rng, w.cfg.World.Waiting) {
		w.sched.after(between(w.rng, time.Second, 10*time.Second), 0, func() { g.holdForApproval(j) })
	}
	if w.faultsOn && chance(w.rng, w.cfg.World.Cancelled) {
		w.sched.after(between(w.rng, 5*time.Second, 10*time.Minute), 0, func() { g.cancel(j, "cancelled") })
	}
	w.sched.after(runner.QueueLimit, 0, func() { g.expire(j) })
}

// holdForApproval moves a queued job to waiting (an environment's
// protection rule) and approves it later: queued -> waiting -> queued.
func (g *githubWorld) holdForApproval(j *ghJob) {
	if j.Status != jobQueued || j.assigned != nil {
		return
	}
	j.Status = jobWaiting
	g.w.stats.inc("jobs.waiting")
	g.w.tr.add("github: job %d waiting for approval", j.ID)
	g.emit(j, runner.ActionWaiting)
	g.w.sched.after(between(g.w.rng, time.Minute, 20*time.Minute), 0, func() { g.approve(j) })
}

func (g *githubWorld) approve(j *ghJob) {
	if j.Status != jobWaiting {
		return
	}
	j.Status = jobQueued
	g.w.tr.add("github: job %d approved, queued again", j.ID)
	g.emit(j, runner.ActionQueued)
	g.assignSoon()
}

// cancel completes a job that has not started (a user's cancel, or the
// 24-hour limit).
func (g *githubWorld) cancel(j *ghJob, conclusion string) {
	if j.Status != jobQueued && j.Status != jobWaiting {
		return
	}
	if r := j.assigned; r != nil {
		r.job, j.assigned = nil, nil
		g.assignSoon()
	}
	j.Status, j.Conclusion, j.CompletedAt = jobCompleted, conclusion, g.w.completedAt()
	g.w.stats.inc("jobs." + conclusion)
	g.w.tr.add("github: job %d %s before it started", j.ID, conclusion)
	g.emit(j, runner.ActionCompleted)
	if j.ss != nil {
		g.w.actions.completed(j)
	}
}

func (g *githubWorld) expire(j *ghJob) {
	if j.Status == jobQueued || j.Status == jobWaiting {
		g.w.stats.inc("jobs.expired_24h")
		g.cancel(j, "cancelled")
	}
}

// assignSoon schedules an assignment pass: GitHub hands out jobs a moment
// after a runner comes online or a job is queued, not instantly.
func (g *githubWorld) assignSoon() {
	if g.assignAt {
		return
	}
	g.assignAt = true
	g.w.sched.after(between(g.w.rng, 200*time.Millisecond, 1500*time.Millisecond), 0, func() {
		g.assignAt = false
		g.assign()
	})
}

// assign hands each queued job, oldest first, to a random idle online
// runner whose labels cover the job's — whichever runner that is.
func (g *githubWorld) assign() {
	w := g.w
	if w.actions != nil {
		w.actions.assignToSet()
	}
	for _, j := range g.jobs {
		if j.Status != jobQueued || j.assigned != nil {
			continue
		}
		var idle []*ghRunner
		for _, r := range g.runners {
			if r.registered && r.online && !r.busy() && r.Owner == j.Org && covers(r.Labels, j.Labels) && canRun(r, j) {
				idle = append(idle, r)
			}
		}
		if len(idle) == 0 {
			continue
		}
		r := idle[w.rng.IntN(len(idle))]
		j.assigned, j.assignedAt, r.job = r, w.now(), j
		if ours(r) && !strings.Contains(r.Name, fmt.Sprintf("-%d-", j.ID)) {
			w.stats.inc("jobs.taken_by_other_jobs_runner")
		}
		w.tr.add("github: job %d assigned to runner %s (id %d)", j.ID, r.Name, r.ID)
		if r.machine != nil && r.machine.alive {
			w.sched.after(between(w.rng, time.Second, 3*time.Second), 0, func() { g.start(j, r) })
		} else {
			g.requeueLater(j, r)
		}
	}
}

// requeueLater takes a job back from a runner that never starts it.
func (g *githubWorld) requeueLater(j *ghJob, r *ghRunner) {
	g.w.sched.at(j.assignedAt.Add(pickupLimit), 0, func() {
		if j.assigned != r || j.Status != jobQueued {
			return
		}
		j.assigned, r.job, r.online = nil, nil, false
		g.w.stats.inc("jobs.requeued_after_60s")
		g.w.tr.add("github: runner %s did not start job %d within %s; job queued again, runner offline", r.Name, j.ID, pickupLimit)
		g.assignSoon()
	})
}

// start is the runner taking its assigned job.
func (g *githubWorld) start(j *ghJob, r *ghRunner) {
	w := g.w
	if j.assigned != r || j.Status != jobQueued {
		return
	}
	if r.machine == nil || !r.machine.alive || !r.registered {
		g.requeueLater(j, r)
		return
	}
	j.assigned, j.runner, j.Status = nil, r, jobInProgress
	w.stats.inc("jobs.started")
	if r.foreign {
		w.stats.inc("jobs.started_on_foreign_runner")
	}
	w.tr.add("github: job %d in_progress on %s", j.ID, r.Name)
	g.emit(j, runner.ActionInProgress)
	if j.ss != nil {
		w.actions.started(j, r)
	}
	w.sched.after(between(w.rng, 30*time.Second, 5*time.Minute), 0, func() { g.finish(j, r) })
}

// finish completes a job on a runner whose machine is still there; an
// ephemeral runner deregisters itself.
func (g *githubWorld) finish(j *ghJob, r *ghRunner) {
	w := g.w
	if j.runner != r || j.Status != jobInProgress || r.machine == nil || !r.machine.alive {
		return
	}
	j.Status, j.Conclusion, j.CompletedAt = jobCompleted, "success", w.completedAt()
	if w.rng.IntN(10) == 0 {
		j.Conclusion = "failure"
	}
	r.job = nil
	w.stats.inc("jobs.completed")
	w.tr.add("github: job %d completed (%s) on %s", j.ID, j.Conclusion, r.Name)
	g.emit(j, runner.ActionCompleted)
	if j.ss != nil {
		w.actions.completed(j)
	}
	if r.ephemeral {
		g.deregister(r)
		w.tr.add("github: ephemeral runner %s deregistered itself", r.Name)
	} else {
		g.assignSoon()
	}
}

// machineGone is what GitHub sees when a runner's machine disappears: an
// idle runner goes offline after a while; a running job fails once the
// runner has been lost for GitHub's timeout.
func (g *githubWorld) machineGone(m *machine) {
	r := m.runner
	if r == nil || !r.registered {
		return
	}
	w := g.w
	if r.running() {
		j := r.job
		w.sched.after(lostRunnerTimeout, 0, func() {
			if j.runner != r || j.Status != jobInProgress {
				return
			}
			j.Status, j.Conclusion, j.lost, j.CompletedAt = jobCompleted, "failure", true, w.completedAt()
			j.interrupted = !m.interruptedAt.IsZero() || m.warningTaken
			r.job, r.online = nil, false
			w.stats.inc("jobs.failed_runner_lost")
			if j.interrupted {
				w.stats.inc("jobs.failed_spot_interrupted")
			}
			w.tr.add("github: job %d failed: runner %s lost", j.ID, r.Name)
			g.emit(j, runner.ActionCompleted)
			if j.ss != nil {
				w.actions.completed(j)
			}
		})
		return
	}
	w.sched.after(between(w.rng, 30*time.Second, 90*time.Second), 0, func() {
		if r.machine == m && !r.running() {
			r.online = false
		}
	})
}

// covers reports whether runner labels cover every job label, as GitHub
// matches them (case-insensitively).
func covers(have, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for _, l := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, l) }) {
			return false
		}
	}
	return true
}

// ours reports whether a runner is one this runfleet registered.
func ours(r *ghRunner) bool { return !r.foreign }
