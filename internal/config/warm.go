package config

import "time"

// Warm sizes a pool's warm machines from its job ledger instead of a
// guessed min_idle (docs/warm-pools.md): the reconciler forecasts the
// pool's arrivals per hour of the week and keeps the hot runners (and, on
// a provider with stopped machines, the stopped ones) that let
// Percentile percent of jobs start within TargetQueueTime, at the fewest
// idle machine-minutes. min_idle and the provider's warm_pool.size stay as
// floors.
type Warm struct {
	TargetQueueTime time.Duration `yaml:"target_queue_time"`
	// Percentile of the week's jobs that must start within the target;
	// 0 means the default.
	Percentile float64 `yaml:"percentile"`
	// MaxIdle bounds the warm machines the forecast may ask for (hot and
	// stopped together), whatever it forecasts: a cap on idle cost.
	MaxIdle int `yaml:"max_idle"`
}

// DefaultWarmPercentile is warm.percentile's default: nine jobs in ten.
const DefaultWarmPercentile = 90

func (w *Warm) applyDefaults() {
	if w != nil && w.Percentile == 0 {
		w.Percentile = DefaultWarmPercentile
	}
}

func (w *Warm) validate(p *problems, i int, pool *Pool) {
	if w == nil {
		return
	}
	if w.TargetQueueTime <= 0 {
		p.add(poolField(i, "warm.target_queue_time"), "must be > 0 (how long a job may wait for its runner, e.g. 10s)")
	}
	if w.Percentile <= 0 || w.Percentile >= 100 {
		p.add(poolField(i, "warm.percentile"), "must be above 0 and below 100 (e.g. 90: nine jobs in ten start within the target), got %g", w.Percentile)
	}
	switch {
	case w.MaxIdle < 1:
		p.add(poolField(i, "warm.max_idle"), "must be ≥ 1 (the most warm machines the forecast may keep)")
	case w.MaxIdle < pool.MinIdle:
		p.add(poolField(i, "warm.max_idle"), "must be ≥ min_idle (%d), the floor the forecast never goes below", pool.MinIdle)
	}
}
