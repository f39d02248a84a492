package engine

import (
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// WhyFacts are the records the answer to "why is this job waiting?" is
// decided from: the job's latest run attempt in the ledger, the instances
// made for it, and its pool's capacity as the store counts it.
type WhyFacts struct {
	JobID int64
	// Job is the latest run attempt's record; nil when runfleet has none.
	Job *runner.Job
	// Instances are those made for Job (by InstanceFor), any status.
	Instances []*runner.Instance
	// PoolKnown says whether Job's pool is configured; MaxRunners and
	// Usage are its limit and the slots it holds now.
	PoolKnown  bool
	MaxRunners int
	Usage      int
	Now        time.Time
}

// WhyAnswer is the verdict: what the job waits for now, in one word
// (Reason) and in one sentence (Sentence), and when the next attempt is
// (NextAttemptAt, zero when not scheduled by time).
type WhyAnswer struct {
	Reason        string    `json:"reason"`
	Sentence      string    `json:"sentence"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
}

// Why verdicts (WhyAnswer.Reason).
const (
	WhyUnknown         = "unknown"
	WhyUnmatched       = "unmatched"
	WhyApproval        = "approval"
	WhyServed          = "served"
	WhyCompleted       = "completed"
	WhyExpired         = "expired"
	WhyRerun           = "rerun"
	WhyGitHubBudget    = "github_budget"
	WhyProviderBackoff = "provider_backoff"
	WhyBooting         = "runner_booting"
	WhyRunnerOnline    = "runner_online"
	WhyCreating        = "runner_creating"
	WhyCapacity        = "capacity"
	WhyNextRunner      = "next_runner"
	WhyPoolGone        = "pool_not_configured"
)

// DecideWhy is the answer, from the records alone: a pure function, so
// every situation is a row of a table test.
func DecideWhy(f WhyFacts) WhyAnswer {
	j := f.Job
	if j == nil {
		return WhyAnswer{Reason: WhyUnknown, Sentence: fmt.Sprintf(
			"runfleet has no record of job %d: GitHub's delivery of its queued event never reached runfleet "+
				"(check the GitHub App's advanced settings, Recent Deliveries — runfleet recovers failed deliveries "+
				"on each reconcile pass), or it was settled more than %s ago; check too that a pool's labels match the job's runs-on",
			f.JobID, retentionWords)}
	}
	switch j.Status {
	case runner.JobUnmatched:
		return WhyAnswer{Reason: WhyUnmatched, Sentence: "matches no pool, so no runner is made for it: " + j.UnmatchedDetail +
			"; fix the pool labels (or owner), then redeliver its queued delivery from the App's delivery log"}
	case runner.JobWaiting:
		return WhyAnswer{Reason: WhyApproval, Sentence: "waits for approval: an environment's protection rules hold it (since " +
			stamp(j.StatusChangedAt) + "); no runner is made until GitHub queues it again"}
	case runner.JobServed:
		return WhyAnswer{Reason: WhyServed, Sentence: "served by runner " + orUnknown(j.RunnerName) + " since " + stamp(j.StatusChangedAt)}
	case runner.JobClosed:
		return WhyAnswer{Reason: WhyCompleted, Sentence: "completed (" + orUnknown(j.Conclusion) + ") at " + stamp(j.StatusChangedAt) +
			ranOn(j)}
	case runner.JobRerun:
		return WhyAnswer{Reason: WhyRerun, Sentence: "failed on machine " + j.Interrupted +
			", which the provider took back; runfleet owes GitHub a re-run of it (a new run attempt)"}
	case runner.JobExpired:
		return WhyAnswer{Reason: WhyExpired, Sentence: "expired: queued longer than GitHub keeps a job (" +
			runner.QueueLimit.String() + "); GitHub cancelled it"}
	}
	return decideOpen(f)
}

// decideOpen answers for a job that wants a runner.
func decideOpen(f WhyFacts) WhyAnswer {
	j := f.Job
	if inst := instanceNamed(f.Instances, j.Instance); runner.Covers(inst, j) {
		return decideCovered(f, inst)
	}
	if !f.PoolKnown {
		return WhyAnswer{Reason: WhyPoolGone, Sentence: "waits in pool " + j.Pool + ", which is no longer configured: no runner is made for it"}
	}
	last := lastMade(f.Instances)
	// A full pool comes first: no backoff ending makes a runner while it
	// is full. A job refused for capacity retries on a backoff of its own.
	if f.MaxRunners > 0 && f.Usage >= f.MaxRunners {
		s := fmt.Sprintf("waits for capacity: pool %s at max_runners %d/%d", j.Pool, f.Usage, f.MaxRunners)
		if last != nil && last.Status.Live() {
			s += fmt.Sprintf(" (its previous runner %s is %s)", last.Name, last.Status)
		}
		a := WhyAnswer{Reason: WhyCapacity, Sentence: s + "; next attempt when a runner of the pool is deleted, and on every reconcile pass"}
		if j.NextAttemptAt.After(f.Now) {
			a.NextAttemptAt = j.NextAttemptAt
			a.Sentence = s + "; next attempt at " + stamp(j.NextAttemptAt) + ", or sooner when a runner of the pool is deleted"
		}
		return a
	}
	if j.NextAttemptAt.After(f.Now) {
		a := WhyAnswer{Reason: WhyProviderBackoff, NextAttemptAt: j.NextAttemptAt}
		if last != nil && last.ProviderFault != "" {
			a.Sentence = fmt.Sprintf("waits for provider backoff until %s after fault %q on runner %s; next attempt then",
				stamp(j.NextAttemptAt), last.ProviderFault, last.Name)
		} else {
			a.Sentence = fmt.Sprintf("waits for backoff until %s: its runner %s ended without serving it; next attempt then",
				stamp(j.NextAttemptAt), lastName(last))
		}
		return a
	}
	return WhyAnswer{Reason: WhyNextRunner, Sentence: fmt.Sprintf(
		"waits for its next runner, %s, to be made (pool %s at %d/%d); next attempt now, or on the next reconcile pass",
		j.InstanceFor(j.Made+1), j.Pool, f.Usage, f.MaxRunners)}
}

// decideCovered answers for a job an instance covers.
func decideCovered(f WhyFacts, inst *runner.Instance) WhyAnswer {
	switch {
	case inst.WaitingForGitHub.After(f.Now):
		return WhyAnswer{Reason: WhyGitHubBudget, NextAttemptAt: inst.WaitingForGitHub, Sentence: fmt.Sprintf(
			"waits for GitHub's API budget until %s to create runner %s; next attempt then",
			stamp(inst.WaitingForGitHub), inst.Name)}
	case inst.NextAttemptAt.After(f.Now) && inst.ProviderFault != "":
		return WhyAnswer{Reason: WhyProviderBackoff, NextAttemptAt: inst.NextAttemptAt, Sentence: fmt.Sprintf(
			"waits for provider backoff until %s after fault %q (create attempt %d of runner %s); next attempt then",
			stamp(inst.NextAttemptAt), inst.ProviderFault, inst.Attempts, inst.Name)}
	case inst.Status == runner.StatusPendingCreate || inst.Status == runner.StatusCreating:
		return WhyAnswer{Reason: WhyCreating, Sentence: fmt.Sprintf("runner %s is being created (%s since %s)",
			inst.Name, inst.Status, stamp(inst.StatusChangedAt))}
	case inst.RunnerStatus == runner.RunnerActive:
		return WhyAnswer{Reason: WhyRunnerOnline, Sentence: fmt.Sprintf(
			"runner %s has taken it; waiting for GitHub's in_progress", inst.Name)}
	case inst.RunnerStatus == runner.RunnerIdle:
		return WhyAnswer{Reason: WhyRunnerOnline, Sentence: fmt.Sprintf(
			"runner %s is online and idle (running since %s); waiting for GitHub to give it the job",
			inst.Name, stamp(inst.StatusChangedAt))}
	}
	return WhyAnswer{Reason: WhyBooting, Sentence: fmt.Sprintf("runner %s booting since %s (%s, runner %s)",
		inst.Name, stamp(inst.StatusChangedAt), inst.Status, orUnknown(string(inst.RunnerStatus)))}
}

// retentionWords is how long a settled job's record is kept, in words.
var retentionWords = fmt.Sprintf("%d days", int(store.DeletedRetention.Hours()/24))

func instanceNamed(instances []*runner.Instance, name string) *runner.Instance {
	for _, in := range instances {
		if name != "" && in.Name == name {
			return in
		}
	}
	return nil
}

// lastMade is the instance made last for the job (the highest n).
func lastMade(instances []*runner.Instance) *runner.Instance {
	var last *runner.Instance
	for _, in := range instances {
		if last == nil || in.CreatedAt.After(last.CreatedAt) {
			last = in
		}
	}
	return last
}

func lastName(in *runner.Instance) string {
	if in == nil {
		return "(none recorded)"
	}
	return in.Name
}

func ranOn(j *runner.Job) string {
	if j.RunnerName == "" {
		return ""
	}
	return " on runner " + j.RunnerName
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unrecorded time"
	}
	return t.UTC().Format(time.RFC3339)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
