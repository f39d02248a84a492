package sim

import "fmt"

// GitHub's API budget is shared by everything an App installation does
// (5,000 requests an hour; about 180 JIT registrations a minute), so the
// calls runfleet spends on each job are counted and bounded.
//
// A job's calls are those that name it or a runner made for it: JIT
// registrations, removals, job reads (and the list a 409 costs the
// adapter). The reconciler's listings are per pass, not per job, and are
// reported apart.
//
// The budget (checked at quiescence, over every servable job of the run):
//
//   - on average at most AvgCallsPerJob: a healthy job costs 2 (register,
//     remove); each instance a fault ends early costs about 3 more
//     (register, remove, one job read) and with 30 % of provider calls
//     failing a job needs ~1.5 instances; GitHub's own 5xx and 429 add
//     retries. 8 leaves room for that and catches a loop that spends per
//     retry rather than per instance.
//   - no single job above MaxCallsPerJob: a job that waits for capacity
//     must not spend a call per retry (P10).
const (
	AvgCallsPerJob = 8.0
	MaxCallsPerJob = 60
)

// charge counts one call against a job (0: a per-pass or warm-pool call).
func (g *githubWorld) charge(job int64, op string) {
	if job == 0 {
		g.w.stats.inc("github.calls_not_per_job")
		return
	}
	if g.callsByJob == nil {
		g.callsByJob = map[int64]int{}
	}
	g.callsByJob[job]++
}

// checkBudget asserts the budget over the servable jobs.
func (g *githubWorld) checkBudget() {
	w := g.w
	total, jobs := 0, 0
	for _, j := range g.jobs {
		if j.Pool == "" {
			continue
		}
		jobs++
		n := g.callsByJob[j.ledgerID()]
		total += n
		w.stats.inc("budget.jobs_costing_" + costBucket(n))
		if n > MaxCallsPerJob {
			w.violateAbout(aboutJob(j.ledgerID()), "GitHub calls per job within budget", "job %d cost %d GitHub calls (budget %d)", j.ledgerID(), n, MaxCallsPerJob)
		}
	}
	w.stats.add("github.calls_per_job_total", int64(total))
	if jobs == 0 {
		return
	}
	if avg := float64(total) / float64(jobs); avg > AvgCallsPerJob {
		w.violate("GitHub calls per job within budget", "%s calls per servable job on average (budget %.1f)", fmt.Sprintf("%.2f", avg), AvgCallsPerJob)
	}
}

// costBucket groups a job's GitHub calls for the figures.
func costBucket(n int) string {
	switch {
	case n <= 2:
		return "0-2_calls"
	case n <= 5:
		return "3-5_calls"
	case n <= 10:
		return "6-10_calls"
	case n <= 20:
		return "11-20_calls"
	}
	return "over_20_calls"
}
