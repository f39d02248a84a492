package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// idleCandidate reports whether an instance counts toward its pool's idle
// runners: alive, not on its way out, and not running a job.
func idleCandidate(inst *runner.Instance) bool {
	switch inst.Status {
	case runner.StatusPendingCreate, runner.StatusCreating, runner.StatusRunning:
		return inst.RunnerStatus != runner.RunnerActive
	}
	return false
}

// idleByPool counts each pool's idle runners (idleCandidate).
func idleByPool(live []*runner.Instance) map[string]int {
	idle := map[string]int{}
	for _, inst := range live {
		if idleCandidate(inst) {
			idle[inst.Pool]++
		}
	}
	return idle
}

// warmKeepers picks, per pool, the min_idle youngest idle runners (the
// decided warm size for a pool with a queue-time target): those the
// idle-surplus rule leaves alone. Younger ones are kept so the pool renews
// itself rather than keeping one machine forever.
func (e *Engine) warmKeepers(live []*runner.Instance) map[string]bool {
	byPool := map[string][]*runner.Instance{}
	for _, inst := range live {
		if idleCandidate(inst) {
			byPool[inst.Pool] = append(byPool[inst.Pool], inst)
		}
	}
	keep := map[string]bool{}
	for poolName, idle := range byPool {
		pool, ok := e.pool(poolName)
		if !ok {
			continue
		}
		n := e.minIdle(pool)
		if n == 0 {
			continue
		}
		sort.SliceStable(idle, func(i, j int) bool { return idle[i].StatusChangedAt.After(idle[j].StatusChangedAt) })
		for _, inst := range idle[:min(n, len(idle))] {
			keep[inst.Name] = true
		}
	}
	return keep
}

// topUpWarmPools creates runners with no job until each pool holds its
// min_idle idle ones, within max_runners (the same atomic reservation as a
// queued job's). A queued job still gets its own instance — exactly one per
// job — so a warm runner only makes the job start sooner, and the job's own
// instance then becomes the pool's next warm runner.
func (e *Engine) topUpWarmPools(ctx context.Context, rep *ReconcileReport) error {
	if !e.anyWarmPool() {
		return nil
	}
	live, err := e.store.ListLiveInstances(ctx)
	if err != nil {
		return fmt.Errorf("list live instances: %w", err)
	}
	idle := map[string][]*runner.Instance{}
	for _, inst := range live {
		if idleCandidate(inst) {
			idle[inst.Pool] = append(idle[inst.Pool], inst)
		}
	}
	var errs []error
	for i := range e.pools {
		pool := &e.pools[i]
		want := e.minIdle(pool)
		// A pool with shapes keeps its warm runners in the shapes its jobs
		// ask for (warmShapes); others, as many of its own as are short.
		for k, shape := range warmShapes(pool, live, idle[pool.Name], want) {
			n := len(idle[pool.Name]) + k
			suffix := make([]byte, 4)
			_, _ = io.ReadFull(e.opts.Rand, suffix)
			name := runner.WarmInstanceName(pool.Name, hex.EncodeToString(suffix))
			log := e.log.With("instance", name, "pool", pool.Name, "job_id", 0, "reconciler", true)
			inst := e.newInstance(pool, nil, name)
			if shape != nil {
				inst.Labels = pool.JobRunnerLabels(e.controllerID, shape)
				log = log.With("shape", shape)
			}
			err := e.admit(ctx, store.Admission{Instance: inst, MaxRunners: pool.MaxRunners}, EventMeta{})
			if errors.Is(err, store.ErrPoolFull) {
				log.Info("pool at max_runners; min_idle not reached", "min_idle", want, "idle", n)
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("warm runner for pool %s: %w", pool.Name, err))
				break
			}
			rep.WarmCreated++
			log.Info("warm runner admitted", "min_idle", want)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) anyWarmPool() bool {
	for _, p := range e.pools {
		// A pool with a queue-time target may want warm runners whatever
		// its min_idle.
		if p.MinIdle > 0 || p.Warm != nil {
			return true
		}
	}
	return false
}
