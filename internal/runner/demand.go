package runner

import "time"

// One definition of what an open job waits for, and of the counts made
// from it. The CLI (through the operator API), the status page, /metrics
// and the EMF gauges all count with MeasureDemand, so they cannot
// disagree: before it, each counted "no instance named on the job" as
// waiting for capacity, which missed a job whose named instance was on
// its way out (pending_delete at max_runners) while its replacement
// waited for a slot.

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

// JobWait is what an unsettled job waits for, in one word.
type JobWait string

const (
	// WaitApproval: an environment's protection rules hold the job.
	WaitApproval JobWait = "approval"
	// WaitRunner: an instance made for the job covers it (booting, or
	// registered and about to be given the job).
	WaitRunner JobWait = "runner"
	// WaitCapacity: the job wants a runner and nothing covers it — its
	// pool is full, its next instance is backing off, or it is about to
	// be made.
	WaitCapacity JobWait = "capacity"
	// WaitUnmatched: no pool serves the job's labels or owner.
	WaitUnmatched JobWait = "unmatched"
	// WaitNothing: demand is settled.
	WaitNothing JobWait = ""
)

// WaitOf is what job waits for, given the live instance its Instance
// names (nil if none, or not live).
func WaitOf(job *Job, named *Instance) JobWait {
	switch {
	case job.Status == JobWaiting:
		return WaitApproval
	case job.Status == JobUnmatched:
		return WaitUnmatched
	case !job.Status.WantsRunner():
		return WaitNothing
	case job.Instance != "" && named != nil && named.Name == job.Instance && Covers(named, job):
		return WaitRunner
	}
	return WaitCapacity
}

// PoolDemand is one pool's unsettled demand.
type PoolDemand struct {
	// Open counts the jobs that want a runner (status open).
	Open int
	// WaitingForCapacity counts the open jobs nothing covers.
	WaitingForCapacity int
	// Approval counts the jobs held for approval.
	Approval int
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

// MeasureDemand counts jobs (unsettled ones; settled ones count nowhere)
// against the live instances.
func MeasureDemand(jobs []*Job, live []*Instance) Demand {
	byName := make(map[string]*Instance, len(live))
	for _, inst := range live {
		byName[inst.Name] = inst
	}
	d := Demand{Pools: map[string]PoolDemand{}, Unmatched: map[string]int{}, Waits: map[string]JobWait{}}
	for _, j := range jobs {
		wait := WaitOf(j, byName[j.Instance])
		d.Waits[j.Key()] = wait
		switch wait {
		case WaitNothing:
			continue
		case WaitUnmatched:
			d.Unmatched[j.UnmatchedReason]++
			continue
		}
		p := d.Pools[j.Pool]
		switch wait {
		case WaitApproval:
			p.Approval++
		case WaitCapacity:
			p.WaitingForCapacity++
		}
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
