package cost

import (
	"log/slog"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Budget watches each pool's cost this calendar month (UTC) against its
// monthly budget, for `runfleet serve`: it hears every deleted instance
// (an engine.Observer) and, the first time a pool's month-to-date passes
// its budget, logs a WARN line and calls Exceeded (the
// runfleet_cost_budget_exceeded gauge). On AWS a CloudWatch alarm over
// runfleet_cost_dollars_total does this instead (template.yaml).
//
// The month-to-date is what this process heard, seeded at start from the
// deleted instances the store keeps (store.DeletedRetention, 7 days): a
// process started late in a month starts from the last week, not the
// month. Prometheus' increase(runfleet_cost_dollars_total[...]) over its
// own retention is the complete sum; this is the built-in warning.
type Budget struct {
	engine.NopObserver
	limits   map[string]float64
	exceeded func(pool string, over bool)
	log      *slog.Logger

	mu    sync.Mutex
	month string
	spent map[string]float64
	over  map[string]bool
}

// NewBudget watches the pools of limits (USD a month; pools without one
// are not watched). exceeded may be nil.
func NewBudget(limits map[string]float64, exceeded func(pool string, over bool), log *slog.Logger) *Budget {
	if exceeded == nil {
		exceeded = func(string, bool) {}
	}
	return &Budget{limits: limits, exceeded: exceeded, log: log, spent: map[string]float64{}, over: map[string]bool{}}
}

// Seed adds the costs of already deleted instances (read from the store
// at start) deleted in now's month.
func (b *Budget) Seed(deleted []*runner.Instance, now time.Time) {
	month := monthOf(now)
	for _, inst := range deleted {
		if inst.Status == runner.StatusDeleted && inst.Cost.Known() && monthOf(inst.StatusChangedAt) == month {
			b.Add(inst.Pool, inst.Cost.USD, inst.StatusChangedAt)
		}
	}
}

// InstanceChanged adds a deleted instance's cost.
func (b *Budget) InstanceChanged(inst *runner.Instance, _ runner.Status) {
	if inst.Status == runner.StatusDeleted && inst.Cost.Known() {
		b.Add(inst.Pool, inst.Cost.USD, inst.StatusChangedAt)
	}
}

// Add counts usd spent by pool at at. A new month starts every pool again
// from 0 (and clears the exceeded gauges).
func (b *Budget) Add(pool string, usd float64, at time.Time) {
	limit, watched := b.limits[pool]
	if !watched || limit <= 0 {
		return
	}
	b.mu.Lock()
	var cleared []string
	if month := monthOf(at); month != b.month {
		if month < b.month {
			b.mu.Unlock()
			return // a late report of last month's cost
		}
		for p, over := range b.over {
			if over {
				cleared = append(cleared, p)
			}
		}
		b.month, b.spent, b.over = month, map[string]float64{}, map[string]bool{}
	}
	b.spent[pool] = roundMicros(b.spent[pool] + usd)
	spent := b.spent[pool]
	crossed := spent > limit && !b.over[pool]
	if crossed {
		b.over[pool] = true
	}
	month := b.month
	b.mu.Unlock()

	for _, p := range cleared {
		b.exceeded(p, false)
	}
	if crossed {
		b.log.Warn("pool over its monthly budget", "pool", pool, "month", month,
			"month_to_date_usd", spent, "monthly_budget_usd", limit)
		b.exceeded(pool, true)
	}
}

// MonthToDate returns what pool spent this month as far as b heard.
func (b *Budget) MonthToDate(pool string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent[pool]
}

func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }
