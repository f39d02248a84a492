package metrics

import (
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// PoolStatus keys a per-pool, per-status gauge.
type PoolStatus struct {
	Pool   string
	Status runner.Status
}

// PoolWait keys runfleet_jobs_waiting.
type PoolWait struct {
	Pool string
	Wait runner.JobWait
}

// PoolAge keys runfleet_open_jobs.
type PoolAge struct {
	Pool string
	Age  string
}

// Fleet is what the gauges show at one moment, read from the store: at
// scrape time in embedded mode, once per reconcile pass on Lambda. Every
// configured pool has every key, at 0 when nothing is there. Its job
// counts are runner.MeasureDemand's, the one definition runfleet why, the
// status page and jobs list use too.
type Fleet struct {
	Pools     []string
	Instances map[PoolStatus]int
	Stuck     map[PoolStatus]int
	OpenJobs  map[PoolAge]int
	// Waiting counts each pool's jobs waiting for capacity; Waits its
	// unsettled jobs by what each waits for.
	Waiting map[string]int
	Waits   map[PoolWait]int
	// OldestWaiting is the age in seconds of each pool's oldest open job.
	OldestWaiting map[string]float64
	// MaxRunners is each configured pool's limit.
	MaxRunners map[string]int
	// Unmatched counts the jobs no pool serves, by reason.
	Unmatched map[string]int
}

// PoolLimit is a configured pool as the gauges need it.
type PoolLimit struct {
	Name       string
	MaxRunners int
}

// StuckFunc says whether an instance is past the bound of its status at
// now (engine.Engine.Stuck).
type StuckFunc func(inst *runner.Instance, now time.Time) bool

// MeasureFleet counts live instances and open jobs for pools (the
// configured ones; a pool met in the records but no longer configured is
// added, so its leftovers stay visible).
func MeasureFleet(pools []PoolLimit, live []*runner.Instance, open []*runner.Job, now time.Time, stuck StuckFunc) Fleet {
	f := Fleet{
		Instances:     map[PoolStatus]int{},
		Stuck:         map[PoolStatus]int{},
		OpenJobs:      map[PoolAge]int{},
		Waiting:       map[string]int{},
		Waits:         map[PoolWait]int{},
		OldestWaiting: map[string]float64{},
		MaxRunners:    map[string]int{},
		Unmatched:     map[string]int{},
	}
	for _, r := range UnmatchedReasons {
		f.Unmatched[r] = 0
	}
	seen := map[string]bool{}
	addPool := func(pool string) {
		if seen[pool] {
			return
		}
		seen[pool] = true
		f.Pools = append(f.Pools, pool)
		for _, s := range runner.AllStatuses {
			f.Instances[PoolStatus{pool, s}] = 0
			f.Stuck[PoolStatus{pool, s}] = 0
		}
		for _, a := range OpenJobAges {
			f.OpenJobs[PoolAge{pool, a}] = 0
		}
		f.Waiting[pool] = 0
		for _, w := range WaitReasons {
			f.Waits[PoolWait{pool, w}] = 0
		}
		f.OldestWaiting[pool] = 0
		f.MaxRunners[pool] = 0
	}
	limits := make(map[string]int, len(pools))
	for _, p := range pools {
		addPool(p.Name)
		f.MaxRunners[p.Name] = p.MaxRunners
		limits[p.Name] = p.MaxRunners
	}
	for _, inst := range live {
		addPool(inst.Pool)
		key := PoolStatus{inst.Pool, inst.Status}
		f.Instances[key]++
		if stuck != nil && stuck(inst, now) {
			f.Stuck[key]++
		}
	}
	demand := runner.MeasureDemand(open, live, limits, now)
	for _, job := range open {
		if !job.Status.WantsRunner() {
			continue // waiting for approval, or matching no pool: no runner is wanted
		}
		addPool(job.Pool)
		f.OpenJobs[PoolAge{job.Pool, AgeOf(now.Sub(job.QueuedAt))}]++
	}
	for pool, d := range demand.Pools {
		addPool(pool)
		f.Waiting[pool] = d.Waits[runner.WaitCapacity]
		for w, n := range d.Waits {
			f.Waits[PoolWait{pool, w}] = n
		}
		if !d.OldestWaiting.IsZero() {
			f.OldestWaiting[pool] = max(0, now.Sub(d.OldestWaiting).Seconds())
		}
	}
	for reason, n := range demand.Unmatched {
		f.Unmatched[reason] += n
	}
	slices.Sort(f.Pools)
	return f
}
