package cost

import (
	"cmp"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Row is the cost of one group of instances: a pool, a repository or a
// day.
type Row struct {
	Key string `json:"key"`
	// USD sums the known costs; Instances counts the instances priced,
	// Unknown those whose cost is unknown (their seconds are in Seconds).
	USD       float64 `json:"usd"`
	Seconds   int64   `json:"seconds"`
	Instances int     `json:"instances"`
	Unknown   int     `json:"unknown"`
}

// Summary is the cost of a set of deleted instances, grouped four ways.
type Summary struct {
	Pools        []Row `json:"pools"`
	Repositories []Row `json:"repositories"`
	// Jobs are keyed by runner.JobKey ("<id>#<run attempt>") of the job
	// each instance's runner ran, or else of the job it was made for.
	Jobs []Row `json:"jobs"`
	// Days are UTC days ("2026-11-28") of the instances' deletion.
	Days  []Row `json:"days"`
	Total Row   `json:"total"`
}

// NoRepository groups instances that served no job's repository (warm
// runners, records of older releases).
const NoRepository = "(none)"

// Summarize sums the costs recorded on instances (those without a cost —
// not deleted yet — are left out). Pools and repositories are sorted by
// cost, dearest first; days oldest first.
func Summarize(instances []*runner.Instance) Summary {
	pools, repos, days, jobs := map[string]*Row{}, map[string]*Row{}, map[string]*Row{}, map[string]*Row{}
	s := Summary{Total: Row{Key: "total"}}
	for _, inst := range instances {
		if inst.Cost == nil {
			continue
		}
		repo := inst.Repository
		if repo == "" {
			repo = NoRepository
		}
		day := inst.StatusChangedAt.UTC().Format(time.DateOnly)
		groups := []*Row{group(pools, inst.Pool), group(repos, repo), group(days, day), &s.Total}
		if job := JobOf(inst); job != "" {
			groups = append(groups, group(jobs, job))
		}
		for _, r := range groups {
			add(r, inst.Cost)
		}
	}
	s.Pools, s.Repositories, s.Jobs, s.Days = dearestFirst(pools), dearestFirst(repos), dearestFirst(jobs), rows(days)
	slices.SortFunc(s.Days, func(a, b Row) int { return cmp.Compare(a.Key, b.Key) })
	return s
}

// JobOf is the job an instance's cost is the job's: the one its runner
// ran (GitHub may hand a runner any queued job its labels fit), or else
// the one it was made for — the demand it was paid for; "" for a warm
// runner that ran nothing.
func JobOf(inst *runner.Instance) string {
	switch {
	case inst.ActiveJobID != 0:
		return runner.JobKey(inst.ActiveJobID, inst.ActiveRunAttempt)
	case inst.JobID != 0:
		return runner.JobKey(inst.JobID, inst.RunAttempt)
	}
	return ""
}

func group(m map[string]*Row, key string) *Row {
	r, ok := m[key]
	if !ok {
		r = &Row{Key: key}
		m[key] = r
	}
	return r
}

func add(r *Row, c *runner.Cost) {
	r.Seconds += c.Seconds
	if !c.Known() {
		r.Unknown++
		return
	}
	r.Instances++
	r.USD = roundMicros(r.USD + c.USD)
}

func rows(m map[string]*Row) []Row {
	out := make([]Row, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	return out
}

func dearestFirst(m map[string]*Row) []Row {
	out := rows(m)
	slices.SortFunc(out, func(a, b Row) int {
		if c := cmp.Compare(b.USD, a.USD); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

func roundMicros(usd float64) float64 {
	return float64(int64(usd*1e6+0.5)) / 1e6
}
