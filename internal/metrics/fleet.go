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

// PoolAge keys runfleet_open_jobs.
type PoolAge struct {
	Pool string
	Age  string
}

// Fleet is what the gauges show at one moment, read from the store: at
// scrape time in embedded mode, once per reconcile pass on Lambda. Every
// configured pool has every key, at 0 when nothing is there.
type Fleet struct {
	Pools     []string
	Instances map[PoolStatus]int
	Stuck     map[PoolStatus]int
	OpenJobs  map[PoolAge]int
	Waiting   map[string]int
}

// StuckFunc says whether an instance is past the bound of its status at
// now (engine.Engine.Stuck).
type StuckFunc func(inst *runner.Instance, now time.Time) bool

// MeasureFleet counts live instances and open jobs for pools (the
// configured ones; a pool met in the records but no longer configured is
// added, so its leftovers stay visible).
func MeasureFleet(pools []string, live []*runner.Instance, open []*runner.Job, now time.Time, stuck StuckFunc) Fleet {
	f := Fleet{
		Instances: map[PoolStatus]int{},
		Stuck:     map[PoolStatus]int{},
		OpenJobs:  map[PoolAge]int{},
		Waiting:   map[string]int{},
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
	}
	for _, p := range pools {
		addPool(p)
	}
	for _, inst := range live {
		addPool(inst.Pool)
		key := PoolStatus{inst.Pool, inst.Status}
		f.Instances[key]++
		if stuck != nil && stuck(inst, now) {
			f.Stuck[key]++
		}
	}
	for _, job := range open {
		if !job.Status.WantsRunner() {
			continue // waiting for approval: no runner is wanted yet
		}
		addPool(job.Pool)
		f.OpenJobs[PoolAge{job.Pool, AgeOf(now.Sub(job.QueuedAt))}]++
		if job.Instance == "" {
			f.Waiting[job.Pool]++
		}
	}
	slices.Sort(f.Pools)
	return f
}
