package statuspage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Source is what the page reads from the engine; *engine.Engine has it.
type Source interface {
	ReadOpenDemand(ctx context.Context) (engine.OpenDemand, error)
	Pools() runner.Pools
	Why(ctx context.Context, jobID int64) (*engine.Timeline, error)
}

// view is everything the template shows, already worded.
type view struct {
	GeneratedAt  string
	Pools        []poolRow
	StatusCounts []statusCount
	Instances    []instanceRow
	Jobs         []jobRow
	Transitions  []transitionRow
	Chart        chart
	// TransitionsKept says how far back the transitions go.
	TransitionsKept int
	// Token is the ?token= the page was loaded with, carried on to the
	// job rows' why links ("" when the page was authorised otherwise).
	Token string
}

type poolRow struct {
	Name string
	Live int
	Max  int
	// Waiting counts the open jobs waiting for capacity (runner.WaitOf's
	// capacity: the pool is at max_runners), as
	// runfleet_jobs_waiting_for_capacity does.
	Waiting int
	Open    int
	// Cost is what the pool's deleted instances kept (7 days) cost, in
	// words; CostUSD and CostUnknown (instances of no known price) are
	// the numbers behind it.
	Cost        string
	CostUSD     float64
	CostUnknown int
	// Warm is a pool with a queue-time target's forecast beside what came,
	// in words ("—" for a pool without one); WarmRunners the runners kept.
	Warm        string
	WarmRunners int
}

type statusCount struct {
	Status runner.Status
	Count  int
}

type instanceRow struct {
	Name, Pool, Status, Runner string
	Job                        int64
	Age, InStatus              string
	Fault                      string
	Retry                      string
}

type jobRow struct {
	ID                                      int64
	Key, Pool, Repository, Status, Instance string
	Waited                                  string
	Labels                                  string
	// Wait is runner.WaitOf's word for what the job waits for, and
	// WaitingFor that word with its detail (the WaitingFor function).
	Wait, WaitingFor string
}

type transitionRow struct {
	At, Ago                  string
	Instance, Pool, From, To string
	Fault                    string
}

// buildView reads the engine and the recorder once, and the pools' costs
// through costs at most once a minute.
func buildView(ctx context.Context, src Source, rec *Recorder, costs *poolCosts, at time.Time) (*view, error) {
	open, err := src.ReadOpenDemand(ctx)
	if err != nil {
		return nil, err
	}
	instances, jobs, demand := open.Live, open.Jobs, open.Demand
	v := &view{GeneratedAt: at.UTC().Format(time.RFC3339)}
	v.Pools = poolRows(src.Pools(), instances, demand)
	spent, listed := costs.read(ctx, src, at)
	setCosts(v.Pools, spent, listed)
	setWarm(v.Pools, rec.Warm())
	v.StatusCounts = statusCounts(instances)
	v.Instances = instanceRows(instances, at)
	v.Jobs = jobRows(jobs, demand, at)
	transitions := rec.Transitions()
	v.TransitionsKept = len(transitions)
	for _, t := range transitions {
		from := string(t.From)
		if from == "" {
			from = "(new)"
		}
		v.Transitions = append(v.Transitions, transitionRow{
			At: t.At.UTC().Format(time.RFC3339), Ago: Relative(t.At, at),
			Instance: t.Instance, Pool: t.Pool, From: from, To: string(t.To), Fault: t.Fault,
		})
	}
	v.Chart = newChart(rec.Samples(), at)
	return v, nil
}

func poolRows(pools runner.Pools, instances []*runner.Instance, demand runner.Demand) []poolRow {
	rows := make([]poolRow, 0, len(pools))
	index := make(map[string]int, len(pools))
	for _, p := range pools {
		index[p.Name] = len(rows)
		rows = append(rows, poolRow{Name: p.Name, Max: p.MaxRunners})
	}
	// A pool that left the config keeps showing while it has anything.
	row := func(name string) *poolRow {
		i, ok := index[name]
		if !ok {
			i = len(rows)
			index[name] = i
			rows = append(rows, poolRow{Name: name})
		}
		return &rows[i]
	}
	for _, in := range instances {
		if in.Status.Live() {
			row(in.Pool).Live++
		}
	}
	// Counted by runner.MeasureDemand, as /metrics and jobs list count.
	names := make([]string, 0, len(demand.Pools))
	for name := range demand.Pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d := demand.Pools[name]
		r := row(name)
		r.Open, r.Waiting = d.Open, d.Waits[runner.WaitCapacity]
	}
	return rows
}

func statusCounts(instances []*runner.Instance) []statusCount {
	counts := make(map[runner.Status]int)
	for _, in := range instances {
		counts[in.Status]++
	}
	var out []statusCount
	for _, s := range runner.AllStatuses {
		if counts[s] > 0 {
			out = append(out, statusCount{Status: s, Count: counts[s]})
		}
	}
	return out
}

// instanceRows lists instances in lifecycle order, oldest first within a
// status, so the ones stuck longest stand out.
func instanceRows(instances []*runner.Instance, at time.Time) []instanceRow {
	sorted := slices.Clone(instances)
	rank := func(s runner.Status) int { return slices.Index(runner.AllStatuses, s) }
	slices.SortStableFunc(sorted, func(a, b *runner.Instance) int {
		if d := rank(a.Status) - rank(b.Status); d != 0 {
			return d
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})
	rows := make([]instanceRow, 0, len(sorted))
	for _, in := range sorted {
		row := instanceRow{
			Name: in.Name, Pool: in.Pool, Status: string(in.Status), Runner: dash(string(in.RunnerStatus)),
			Job: in.JobID, Age: ago(in.CreatedAt, at), InStatus: ago(in.StatusChangedAt, at),
			Fault: in.ProviderFault,
		}
		if in.WaitingForGitHub.After(at) {
			row.Retry = "waiting for GitHub's API budget, goes " + Relative(in.WaitingForGitHub, at)
		} else if in.NextAttemptAt.After(at) {
			row.Retry = fmt.Sprintf("attempt %d, retry %s", in.Attempts, Relative(in.NextAttemptAt, at))
		} else if in.Attempts > 0 {
			row.Retry = fmt.Sprintf("attempt %d", in.Attempts)
		}
		rows = append(rows, row)
	}
	return rows
}

func jobRows(jobs []*runner.Job, demand runner.Demand, at time.Time) []jobRow {
	rows := make([]jobRow, 0, len(jobs))
	for _, j := range jobs {
		wait := demand.Waits[j.Key()]
		rows = append(rows, jobRow{
			ID: j.ID, Key: j.Key(), Pool: dash(j.Pool), Repository: dash(j.Repository), Status: string(j.Status),
			Instance: dash(j.Instance), Waited: ago(j.QueuedAt, at), Labels: strings.Join(j.Labels, ", "),
			Wait: string(wait), WaitingFor: WaitingFor(j, wait, at),
		})
	}
	return rows
}

// WaitingFor is what an open job waits for as jobs list and the status
// page show it: runner.WaitOf's word, then the detail the record adds
// (which runner, until when, which labels no pool has).
func WaitingFor(j *runner.Job, wait runner.JobWait, at time.Time) string {
	switch wait {
	case runner.WaitNothing:
		return "-"
	case runner.WaitUnmatched:
		return string(wait) + ": " + j.UnmatchedDetail
	case runner.WaitGitHubBudget, runner.WaitCreateBackoff, runner.WaitCreating, runner.WaitBooting, runner.WaitOnline:
		return string(wait) + ": runner " + j.Instance
	case runner.WaitCapacity, runner.WaitBackoff:
		if j.NextAttemptAt.After(at) {
			return string(wait) + ": next try " + Relative(j.NextAttemptAt, at)
		}
	}
	return string(wait)
}

// ago is how long before at t was, or "-".
func ago(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return HumanDuration(at.Sub(t))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// setWarm words each adaptive pool's last forecast beside what arrived:
// the foretold rate is a minute's, what came is the last hour's, so both
// are put per hour for a reader to compare.
func setWarm(rows []poolRow, warm map[string]engine.WarmSize) {
	for i := range rows {
		w, ok := warm[rows[i].Name]
		if !ok {
			rows[i].Warm = "—"
			continue
		}
		rows[i].WarmRunners = w.Hot
		rows[i].Warm = fmt.Sprintf("%d warm (%s) · %.0f/h foretold · %d came in the last hour · %s of history",
			w.Hot, w.Reason, w.PerMinute*60, w.ArrivedLastHour, historySpan(w.HistoryDays))
	}
}

// historySpan words how far back a forecast reads: days once there are
// some, hours before (a new pool's first day).
func historySpan(days float64) string {
	if days >= 1 {
		return fmt.Sprintf("%.0f d", math.Floor(days))
	}
	return fmt.Sprintf("%.0f h", math.Floor(days*24))
}
