package replay

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/runfleet/runfleet/internal/warm"
)

// Boot is the spread of one kind's time from a job's queued to its runner
// taking it, drawn uniformly in [Min, Max].
type Boot struct{ Min, Max time.Duration }

func (b Boot) draw(r *rand.Rand) time.Duration {
	return b.Min + time.Duration(r.Int64N(int64(b.Max-b.Min)+1))
}

// Model is the fleet the strategies run on. Boot times are RunsOn's
// published figures for EC2 by default (DefaultModel).
type Model struct {
	Hot, Cold Boot
	// Reconcile is how often the strategy's size is applied: surplus idle
	// runners removed, the shortfall launched.
	Reconcile time.Duration
	// IdleGrace is how long a surplus idle runner stays before it is
	// removed: runfleet's idle-surplus rule waits for the pool's
	// bootstrap_timeout. 0 removes surplus at the next pass.
	IdleGrace time.Duration
}

// DefaultModel: a hot runner takes its job in 2–6 s, a cold launch
// 25–60 s; the reconciler runs every 30 s (engine.reconcile_interval's
// default) and removes a surplus idle runner after 20 minutes (the
// default bootstrap_timeout, which the idle-surplus rule waits for).
func DefaultModel() Model {
	return Model{
		Hot:       Boot{2 * time.Second, 6 * time.Second},
		Cold:      Boot{25 * time.Second, 60 * time.Second},
		Reconcile: 30 * time.Second,
		IdleGrace: 20 * time.Minute,
	}
}

// Strategy is how many hot idle runners to keep at t, given the arrivals
// so far (h counts only what has arrived before t). Size may keep state
// between calls (Adaptive keeps its plan): one Strategy value per Run.
type Strategy struct {
	Name string
	Size func(h *warm.History, t time.Time) int
}

// Static keeps n idle runners always (min_idle: n).
func Static(n int) Strategy {
	return Strategy{Name: fmt.Sprintf("static min_idle %d", n), Size: func(*warm.History, time.Time) int { return n }}
}

// Cron keeps n idle runners on weekdays 08:00–18:00 UTC and none
// otherwise, as Terraform's runner module's idle_config schedules do.
func Cron(n int) Strategy {
	return Strategy{Name: fmt.Sprintf("cron weekdays 8–18: %d", n), Size: func(_ *warm.History, t time.Time) int {
		if t.Weekday() == time.Saturday || t.Weekday() == time.Sunday || t.Hour() < 8 || t.Hour() >= 18 {
			return 0
		}
		return n
	}}
}

// Adaptive sizes the pool as the reconciler does: warm.PlanWeek over what
// arrived, then the plan's forecast and warm.Size for the target (hot
// runners only: a stopped machine's 10–15 s misses a 10 s target). The
// plan is made once an hour here, to replay weeks quickly; the reconciler
// makes it every pass, which only makes it fresher.
func Adaptive(target time.Duration, percentile float64, maxIdle int) Strategy {
	kinds, params, aim := warm.DefaultKinds(false), warm.Defaults(), warm.AimPercentile(percentile)
	var plan warm.Plan
	var planned time.Time
	return Strategy{Name: fmt.Sprintf("adaptive p%g ≤ %s", percentile, target), Size: func(h *warm.History, t time.Time) int {
		if planned.IsZero() || t.Sub(planned) >= time.Hour || t.Before(planned) {
			plan, planned = warm.PlanWeek(*h, t, aim, params), t
		}
		f := plan.Forecast(*h, t, aim, params)
		return warm.Size(f.Need, target, kinds, warm.Limits{MaxIdle: maxIdle}).Hot
	}}
}

// Result is one strategy's figures on one trace, over the measured week.
type Result struct {
	Trace, Strategy string
	Jobs            int
	P50, P90, P99   time.Duration
	// Within10s is the share of jobs that started within 10 s.
	Within10s float64
	// IdleMinutes is machine-minutes of runners launched for no job or
	// left with none (idle or booting): what warmth costs.
	IdleMinutes float64
}

// IdlePerJob is idle machine-minutes per measured job.
func (r Result) IdlePerJob() float64 {
	if r.Jobs == 0 {
		return 0
	}
	return r.IdleMinutes / float64(r.Jobs)
}

// Run replays tr against s on m: every job gets its own launch (exactly one
// runner per job, as runfleet makes it) and takes whichever runner is ready
// first — an idle one at once, else the first booting one. A runner left
// without a job is idle; the strategy's size is applied each Reconcile.
func Run(tr Trace, s Strategy, m Model, seed uint64) Result {
	r := rand.New(rand.NewPCG(seed, 0xb007))
	h := warm.NewHistory(tr.Known, tr.End, time.Minute, nil)
	var (
		booting readyHeap   // launches no job has taken, by ready time
		idle    []time.Time // ready runners with no job, by when they became ready
		waits   []time.Duration
		idleSec float64
		now     = tr.Known
	)
	// advance moves virtual time to t: launches that become ready join the
	// idle runners, and idle and booting machines are paid for.
	advance := func(t time.Time) {
		for now.Before(t) {
			next := t
			if booting.Len() > 0 && booting[0].Before(next) {
				next = booting[0]
			}
			if !now.Before(tr.Measure) {
				idleSec += float64(len(idle)+booting.Len()) * next.Sub(now).Seconds()
			} else if next.After(tr.Measure) {
				idleSec += float64(len(idle)+booting.Len()) * next.Sub(tr.Measure).Seconds()
			}
			now = next
			for booting.Len() > 0 && !booting[0].After(now) {
				idle = append(idle, heap.Pop(&booting).(time.Time))
			}
		}
	}
	next := 0
	for tick := tr.Known; tick.Before(tr.End); tick = tick.Add(m.Reconcile) {
		for ; next < len(tr.Arrivals) && tr.Arrivals[next].Before(tick); next++ {
			at := tr.Arrivals[next]
			advance(at)
			h.Add(at)
			// The job's own launch: it may end up serving a later job.
			heap.Push(&booting, at.Add(m.Cold.draw(r)))
			var wait time.Duration
			if len(idle) > 0 {
				// The youngest takes it; the engine keeps the youngest as
				// warm keepers, so the oldest are the surplus it removes.
				idle = idle[:len(idle)-1]
				wait = m.Hot.draw(r)
			} else {
				ready := heap.Pop(&booting).(time.Time)
				wait = max(ready.Sub(at), m.Hot.draw(r))
			}
			if !at.Before(tr.Measure) {
				waits = append(waits, wait)
			}
		}
		advance(tick)
		want := s.Size(&h, tick)
		// The reconciler removes surplus idle runners — the oldest, once
		// idle past IdleGrace — and launches the shortfall; booting
		// launches count toward the size, as the engine's live instances
		// do.
		surplus := len(idle) - want
		kept := idle[:0]
		for _, since := range idle {
			if surplus > 0 && tick.Sub(since) >= m.IdleGrace {
				surplus--
				continue
			}
			kept = append(kept, since)
		}
		idle = kept
		for n := len(idle) + booting.Len(); n < want; n++ {
			heap.Push(&booting, tick.Add(m.Cold.draw(r)))
		}
	}
	advance(tr.End)
	res := Result{Trace: tr.Name, Strategy: s.Name, Jobs: len(waits), IdleMinutes: idleSec / 60}
	res.P50, res.P90, res.P99 = percentile(waits, 50), percentile(waits, 90), percentile(waits, 99)
	for _, w := range waits {
		if w <= 10*time.Second {
			res.Within10s++
		}
	}
	if len(waits) > 0 {
		res.Within10s /= float64(len(waits))
	}
	return res
}

// percentile is the nearest-rank percentile of d (sorted in place).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	rank := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(rank, 0), len(d)-1)]
}

type readyHeap []time.Time

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *readyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Strategies are the report's rows besides the adaptive pool: no warm
// pool, static sizes, and cron schedules at some of the same sizes.
func Strategies() []Strategy {
	var out []Strategy
	for _, n := range []int{0, 1, 2, 4, 6, 8, 12, 16, 24, 32, 48} {
		out = append(out, Static(n))
	}
	for _, n := range []int{4, 8, 16, 48} {
		out = append(out, Cron(n))
	}
	return out
}
