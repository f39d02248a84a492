package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/warm"
	"github.com/runfleet/runfleet/providers"
)

// WarmSize is what a reconcile pass decided for one pool with a
// queue-time target (pools[].warm): the forecast and the warm runners it
// keeps. Status pages and logs show it beside what arrived.
type WarmSize struct {
	Pool string `json:"pool"`
	// Need is how many jobs the forecast says must find a warm runner at
	// once; PerMinute the arrivals a minute it foretells (Level included)
	// and ArrivedLastHour what came in the last hour, to read beside it.
	Need            int     `json:"forecast_need"`
	PerMinute       float64 `json:"forecast_per_minute"`
	Level           float64 `json:"forecast_level"`
	ArrivedLastHour int     `json:"arrived_last_hour"`
	// HistoryDays is how far back the pool's history reaches (the ledger's
	// week and the arrivals kept past it): under 7 the plan repeats on the
	// day, under 1 only the last hour is read.
	HistoryDays float64 `json:"history_days"`
	// Hot is the warm runners kept (the pool's effective min_idle),
	// Stopped the stopped machines asked of a provider that keeps them
	// (providers.WarmSizer; warm_pool.size is its floor), Reason why
	// (warm.Reason…).
	Hot     int    `json:"hot"`
	Stopped int    `json:"stopped,omitempty"`
	Reason  string `json:"reason"`
	// Idle is the pool's idle runners the pass found, and IdleSeconds the
	// machine-seconds they stood idle since the pool's last pass in this
	// process (at most maxIdleGap of it): what warmth costs, counted.
	Idle        int     `json:"idle"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// maxIdleGap bounds the gap one pass counts idle time over: after a
// pause (a restart, a Lambda environment's first pass) the runners found
// idle are not assumed idle for all of it.
const maxIdleGap = 5 * time.Minute

// warmSizes remembers each adaptive pool's last decision, for the rules
// that read a pool's warm size later in the pass (warmKeepers, the idle
// surplus rule) and for the next pass should the ledger not answer.
type warmSizes struct {
	mu   sync.Mutex
	hot  map[string]int
	last map[string]WarmSize
	at   map[string]time.Time // when the pool's idle runners were last counted
}

func (w *warmSizes) set(s WarmSize) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hot == nil {
		w.hot, w.last = map[string]int{}, map[string]WarmSize{}
	}
	w.hot[s.Pool], w.last[s.Pool] = s.Hot, s
}

// idleSince returns the time the pool's idle runners were last counted
// and records now as the next one.
func (w *warmSizes) idleSince(pool string, now time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]time.Time{}
	}
	prev, ok := w.at[pool]
	w.at[pool] = now
	return prev, ok
}

func (w *warmSizes) lastOf(pool string) (WarmSize, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.last[pool]
	return s, ok
}

// stopped is the pool's last decided stopped machines, if any decision.
func (w *warmSizes) stopped(pool string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.last[pool]
	return s.Stopped, ok
}

func (w *warmSizes) get(pool string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.hot[pool]
	return n, ok
}

// warmHistory is how far back the forecast reads: the weeks it weighs and
// the spans it reads around each.
func warmHistory(p warm.Params) time.Duration {
	return time.Duration(p.Weeks)*warm.Week + p.Ahead + 2*p.Spread
}

// minIdle is the pool's warm runner count for this pass: its static
// min_idle, or the adaptive decision (never below min_idle) once one was
// made.
func (e *Engine) minIdle(pool *runner.Pool) int {
	if pool.Warm == nil {
		return pool.MinIdle
	}
	if n, ok := e.memory.warm.get(pool.Name); ok {
		return n
	}
	return pool.MinIdle
}

// decideWarm sizes every pool with a queue-time target from its job
// ledger: the effects (reading the ledger, remembering, logging) are here;
// the decision is warm.Predict and warm.Size.
func (e *Engine) decideWarm(ctx context.Context, live []*runner.Instance, now time.Time, rep *ReconcileReport) error {
	var names []string
	for _, pool := range e.pools {
		if pool.Warm != nil {
			names = append(names, pool.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	params := warm.Defaults()
	// One read for every pool with a target: on DynamoDB each read is a
	// Scan of the whole table.
	var byPool map[string][]time.Time
	err := errors.ErrUnsupported
	if src, ok := e.store.(store.Arrivals); ok {
		byPool, err = src.ListArrivals(ctx, names, now.Add(-warmHistory(params)))
	}
	idle := idleByPool(live)
	var errs []error
	for i := range e.pools {
		pool := &e.pools[i]
		if pool.Warm == nil {
			continue
		}
		log := e.log.With("pool", pool.Name, "reconciler", true)
		arrivals := byPool[pool.Name]
		if errors.Is(err, errors.ErrUnsupported) {
			// A store that cannot list arrivals keeps the static floor:
			// warm runners are never guessed.
			log.Warn("the store cannot list the job ledger's arrivals; the pool keeps min_idle", "min_idle", pool.MinIdle)
			continue
		}
		if err != nil {
			// The last decision stands for this pass (minIdle).
			errs = append(errs, fmt.Errorf("warm size of pool %s: %w", pool.Name, err))
			continue
		}
		stoppedOK := providers.KeepsStopped(e.providers[pool.Name])
		h := keepArrivals(ctx, e.store, pool.Name, arrivals, now, params, log)
		size := decideWarmSize(pool, h, arrivals, now, params, stoppedOK)
		size.Idle = idle[pool.Name]
		if prev, ok := e.memory.warm.idleSince(pool.Name, now); ok && now.After(prev) {
			size.IdleSeconds = float64(size.Idle) * min(now.Sub(prev), maxIdleGap).Seconds()
		}
		if prev, had := e.memory.warm.lastOf(pool.Name); !had || prev.Hot != size.Hot || prev.Reason != size.Reason {
			log.Info("warm size decided", "hot", size.Hot, "forecast_need", size.Need, "forecast_per_minute", size.PerMinute,
				"forecast_level", size.Level, "arrived_last_hour", size.ArrivedLastHour, "history_days", size.HistoryDays, "reason", size.Reason, "min_idle", pool.MinIdle)
		}
		e.memory.warm.set(size)
		rep.Warm = append(rep.Warm, size)
	}
	return errors.Join(errs...)
}

// decideWarmSize is the decision for one pool: pure, from the pool's
// history at now (what was kept joined to the ledger: warm.Kept.History)
// and the ledger's arrivals (queued times) for what came in the last hour.
func decideWarmSize(pool *runner.Pool, h warm.History, arrivals []time.Time, now time.Time, p warm.Params, stoppedOK bool) WarmSize {
	f := warm.Predict(h, now, warm.AimPercentile(pool.Warm.Percentile), p)
	d := warm.Size(f.Need, pool.Warm.Target, warm.DefaultKinds(stoppedOK),
		warm.Limits{MinIdle: pool.MinIdle, MaxIdle: pool.Warm.MaxIdle, MaxRunners: pool.MaxRunners})
	size := WarmSize{Pool: pool.Name, Need: f.Need, PerMinute: f.PerStep, Level: f.Level, Hot: d.Hot, Stopped: d.Stopped, Reason: d.Reason,
		HistoryDays: math.Round(max(now.Sub(h.Start), 0).Hours()/24*100) / 100}
	for _, a := range arrivals {
		if !a.Before(now.Add(-time.Hour)) && !a.After(now) {
			size.ArrivedLastHour++
		}
	}
	return size
}
