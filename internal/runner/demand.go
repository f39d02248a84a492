package runner

import "time"

// One definition of what an unsettled job waits for, and of the counts
// made from it. jobs list (through the operator API), runfleet why, the
// status page, /metrics and the EMF gauges all classify with WaitOf, so
// they cannot disagree: before it, jobs list and the gauges counted every
// job nothing covered as waiting for capacity while runfleet why told a
// full pool from a backoff, and the two answered the same job
// differently.

// Covers reports whether inst still serves job: it is live, not on its
// way out, in the job's pool, and its runner has not taken another job.
// An instance that does not cover its job leaves the job wanting a new
// one.
func Covers(inst *Instance, job *Job) bool {
	switch {
	case inst == nil || !inst.Status.Live() || inst.Status.PendingDeletion() || inst.Pool != job.Pool:
		return false
	case inst.Status == StatusDeleting || inst.Status == StatusError:
		return false
	case inst.RunnerStatus == RunnerActive && inst.ActiveJobID != 0 && inst.ActiveJobID != job.ID:
		return false
	}
	return true
}

// JobWait is what an unsettled job waits for, in one word: the word jobs
// list, runfleet why (its reason), the status page and the
// runfleet_jobs_waiting gauge show.
type JobWait string

const (
	// WaitApproval: an environment's protection rules hold the job.
	WaitApproval JobWait = "approval"
	// WaitUnmatched: no pool serves the job's labels or owner.
	WaitUnmatched JobWait = "unmatched"
	// WaitPoolGone: the job's pool is no longer configured; nothing is
	// made for it.
	WaitPoolGone JobWait = "pool_not_configured"
	// WaitCapacity: nothing covers the job and its pool is at max_runners.
	WaitCapacity JobWait = "capacity"
	// WaitBackoff: nothing covers the job and the pool has room, but its
	// previous runner ended without serving it: the next is not made
	// before the job's NextAttemptAt.
	WaitBackoff JobWait = "backoff"
	// WaitNextRunner: nothing covers the job and nothing holds it back:
	// its next runner is about to be made.
	WaitNextRunner JobWait = "next_runner"
	// WaitGitHubBudget: its runner's create waits for GitHub's API budget.
	WaitGitHubBudget JobWait = "github_budget"
	// WaitCreateBackoff: its runner's create failed (at GitHub or at the
	// provider) and is retried after a backoff.
	WaitCreateBackoff JobWait = "create_backoff"
	// WaitCreating: its runner's machine is being made.
	WaitCreating JobWait = "runner_creating"
	// WaitBooting: its runner's machine is made; the runner has not come
	// online in GitHub yet.
	WaitBooting JobWait = "runner_booting"
	// WaitOnline: its runner is online in GitHub; GitHub has not started
	// the job on it yet.
	WaitOnline JobWait = "runner_online"
	// WaitNothing: the job is settled (served, completed, expired, owed a
	// re-run): it waits for no runner.
	WaitNothing JobWait = ""
)

// JobWaits lists every reason an unsettled job waits, in the order the
// gauges and the totals show them.
var JobWaits = []JobWait{
	WaitApproval, WaitUnmatched, WaitPoolGone, WaitCapacity, WaitBackoff, WaitNextRunner,
	WaitGitHubBudget, WaitCreateBackoff, WaitCreating, WaitBooting, WaitOnline,
}

// PoolSlots is a job's pool as WaitOf needs it: whether it is configured,
// its max_runners (0: no limit) and how many slots it holds now.
type PoolSlots struct {
	Configured bool
	MaxRunners int
	Held       int
}

// Full reports whether the pool has no slot left.
func (p PoolSlots) Full() bool { return p.MaxRunners > 0 && p.Held >= p.MaxRunners }

// WaitOf is what job waits for at now: named is the instance the job's
// Instance names (nil when none, or not read), pool the job's pool. The
// order is the engine's: a covering instance answers first (supply makes
// nothing while one covers the job), then the pool (a full pool makes no
// runner whatever the backoff says), then the job's own backoff.
func WaitOf(job *Job, named *Instance, pool PoolSlots, now time.Time) JobWait {
	switch {
	case job.Status == JobWaiting:
		return WaitApproval
	case job.Status == JobUnmatched:
		return WaitUnmatched
	case !job.Status.WantsRunner():
		return WaitNothing
	case job.Instance != "" && named != nil && named.Name == job.Instance && Covers(named, job):
		return coveredWait(named, now)
	case !pool.Configured:
		return WaitPoolGone
	case pool.Full():
		return WaitCapacity
	case job.NextAttemptAt.After(now):
		return WaitBackoff
	}
	return WaitNextRunner
}

// coveredWait is what a job waits for while inst covers it: the stage of
// its runner.
func coveredWait(inst *Instance, now time.Time) JobWait {
	switch {
	case inst.WaitingForGitHub.After(now):
		return WaitGitHubBudget
	case inst.NextAttemptAt.After(now) && inst.ProviderFault != "":
		return WaitCreateBackoff
	case inst.Status == StatusPendingCreate || inst.Status == StatusCreating:
		return WaitCreating
	case inst.RunnerStatus == RunnerActive || inst.RunnerStatus == RunnerIdle:
		return WaitOnline
	}
	return WaitBooting
}

// PoolDemand is one pool's unsettled demand.
type PoolDemand struct {
	// Open counts the jobs that want a runner (status open).
	Open int
	// Waits counts the pool's unsettled jobs by what each waits for
	// (approval included); Waits[WaitCapacity] is the jobs waiting for
	// capacity.
	Waits map[JobWait]int
	// OldestWaiting is the QueuedAt of the oldest open job (zero if none).
	OldestWaiting time.Time
}

// Demand is the unsettled demand: per pool, and the unmatched jobs by
// reason.
type Demand struct {
	Pools     map[string]PoolDemand
	Unmatched map[string]int
	// Waits says what each job waits for, by job key.
	Waits map[string]JobWait
}

// MeasureDemand classifies jobs (unsettled ones; settled ones count
// nowhere) at now. live are the live instances, which are also what a
// pool's slots are counted from; maxRunners has every configured pool's
// max_runners (a pool missing from it is no longer configured).
func MeasureDemand(jobs []*Job, live []*Instance, maxRunners map[string]int, now time.Time) Demand {
	byName := make(map[string]*Instance, len(live))
	held := map[string]int{}
	for _, inst := range live {
		byName[inst.Name] = inst
		if inst.Status.Live() {
			held[inst.Pool]++
		}
	}
	d := Demand{Pools: map[string]PoolDemand{}, Unmatched: map[string]int{}, Waits: map[string]JobWait{}}
	for _, j := range jobs {
		limit, configured := maxRunners[j.Pool]
		wait := WaitOf(j, byName[j.Instance], PoolSlots{Configured: configured, MaxRunners: limit, Held: held[j.Pool]}, now)
		d.Waits[j.Key()] = wait
		switch wait {
		case WaitNothing:
			continue
		case WaitUnmatched:
			d.Unmatched[j.UnmatchedReason]++
			continue
		}
		p := d.Pools[j.Pool]
		if p.Waits == nil {
			p.Waits = map[JobWait]int{}
		}
		p.Waits[wait]++
		if wait != WaitApproval {
			p.Open++
			if !j.QueuedAt.IsZero() && (p.OldestWaiting.IsZero() || j.QueuedAt.Before(p.OldestWaiting)) {
				p.OldestWaiting = j.QueuedAt
			}
		}
		d.Pools[j.Pool] = p
	}
	return d
}

// MaxRunners maps each pool to its max_runners, for MeasureDemand.
func (ps Pools) MaxRunners() map[string]int {
	out := make(map[string]int, len(ps))
	for _, p := range ps {
		out[p.Name] = p.MaxRunners
	}
	return out
}
