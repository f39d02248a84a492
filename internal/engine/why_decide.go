package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
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
	// Pool is Job's pool: configured or not, its limit and the slots it
	// holds now.
	Pool runner.PoolSlots
	// CreatingTakeover is how long an instance may stay creating before
	// the reconciler presumes its worker dead and takes the create over
	// (the creating timeout plus the takeover grace, as reconcileOne
	// measures it); zero when the asker does not run the reconciler and
	// so does not know it.
	CreatingTakeover time.Duration
	Now              time.Time
}

// WhyAnswer is the verdict: what the job waits for now, in one word
// (Reason) and in one sentence (Sentence), and when the next attempt is
// (NextAttemptAt, zero when not scheduled by time). For a job that waits,
// Reason is runner.WaitOf's word, the one jobs list, the status page and
// the gauges show.
type WhyAnswer struct {
	Reason        string    `json:"reason"`
	Sentence      string    `json:"sentence"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
}

// The verdicts of a job that waits for nothing (WhyAnswer.Reason); a
// waiting job's are runner.JobWait's words.
const (
	WhyUnknown   = "unknown"
	WhyServed    = "served"
	WhyCompleted = "completed"
	WhyExpired   = "expired"
	WhyRerun     = "rerun"
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
	named := instanceNamed(f.Instances, j.Instance)
	wait := runner.WaitOf(j, named, f.Pool, f.Now)
	if wait == runner.WaitNothing {
		return WhyAnswer{Reason: WhyUnknown, Sentence: fmt.Sprintf("its record has status %s, which this build of runfleet does not know", j.Status)}
	}
	a := explainWait(f, wait, named)
	a.Reason = string(wait)
	return a
}

// explainWait words wait, the verdict runner.WaitOf gave for f's job;
// named is the instance the job names (nil when none).
func explainWait(f WhyFacts, wait runner.JobWait, named *runner.Instance) WhyAnswer {
	j := f.Job
	switch wait {
	case runner.WaitApproval:
		return WhyAnswer{Sentence: "waits for approval: an environment's protection rules hold it (since " +
			stamp(j.StatusChangedAt) + "); no runner is made until GitHub queues it again"}
	case runner.WaitUnmatched:
		return WhyAnswer{Sentence: "matches no pool, so no runner is made for it: " + j.UnmatchedDetail +
			"; fix the pool labels (or owner), then redeliver its queued delivery from the App's delivery log"}
	case runner.WaitPoolGone:
		return WhyAnswer{Sentence: "waits in pool " + j.Pool + ", which is no longer configured: no runner is made for it"}
	case runner.WaitCapacity:
		return explainCapacity(f)
	case runner.WaitBackoff:
		return WhyAnswer{NextAttemptAt: j.NextAttemptAt, Sentence: fmt.Sprintf(
			"waits for backoff until %s before its next runner, %s, is made (pool %s at %d/%d): %s; next attempt then",
			stamp(j.NextAttemptAt), j.InstanceFor(j.Made+1), j.Pool, f.Pool.Held, f.Pool.MaxRunners, previousRunner(lastMade(f.Instances)))}
	case runner.WaitNextRunner:
		return WhyAnswer{Sentence: fmt.Sprintf(
			"waits for its next runner, %s, to be made (pool %s at %d/%d); next attempt now, or on the next reconcile pass",
			j.InstanceFor(j.Made+1), j.Pool, f.Pool.Held, f.Pool.MaxRunners)}
	}
	return explainCovered(f, wait, named)
}

// explainCapacity words a wait for a slot in a full pool. A job refused
// for capacity retries on a backoff of its own, or sooner when a slot
// frees.
func explainCapacity(f WhyFacts) WhyAnswer {
	j := f.Job
	s := fmt.Sprintf("waits for capacity: pool %s at max_runners %d/%d", j.Pool, f.Pool.Held, f.Pool.MaxRunners)
	if last := lastMade(f.Instances); last != nil && last.Status.Live() {
		s += fmt.Sprintf(" (its previous runner %s is %s)", last.Name, last.Status)
	}
	if j.NextAttemptAt.After(f.Now) {
		return WhyAnswer{NextAttemptAt: j.NextAttemptAt,
			Sentence: s + "; next attempt at " + stamp(j.NextAttemptAt) + ", or sooner when a runner of the pool is deleted"}
	}
	return WhyAnswer{Sentence: s + "; next attempt when a runner of the pool is deleted, and on every reconcile pass"}
}

// explainCovered words a wait on inst, the instance that covers the job.
func explainCovered(f WhyFacts, wait runner.JobWait, inst *runner.Instance) WhyAnswer {
	switch wait {
	case runner.WaitGitHubBudget:
		return WhyAnswer{NextAttemptAt: inst.WaitingForGitHub, Sentence: fmt.Sprintf(
			"waits for GitHub's API budget until %s to create runner %s; next attempt then",
			stamp(inst.WaitingForGitHub), inst.Name)}
	case runner.WaitCreateBackoff:
		return WhyAnswer{NextAttemptAt: inst.NextAttemptAt, Sentence: fmt.Sprintf(
			"waits for its runner's create to be retried at %s after %s (create attempt %d of runner %s); next attempt then",
			stamp(inst.NextAttemptAt), faultWords(inst.ProviderFault), inst.Attempts, inst.Name)}
	case runner.WaitCreating:
		return WhyAnswer{Sentence: creatingWords(inst, f.CreatingTakeover, f.Now)}
	case runner.WaitOnline:
		if inst.RunnerStatus == runner.RunnerActive {
			return WhyAnswer{Sentence: fmt.Sprintf("runner %s has taken it; waiting for GitHub's in_progress", inst.Name)}
		}
		return WhyAnswer{Sentence: fmt.Sprintf(
			"runner %s is online and idle (running since %s); waiting for GitHub to give it the job",
			inst.Name, stamp(inst.StatusChangedAt))}
	}
	return WhyAnswer{Sentence: fmt.Sprintf("runner %s booting since %s (%s, runner %s)",
		inst.Name, stamp(inst.StatusChangedAt), inst.Status, orUnknown(string(inst.RunnerStatus)))}
}

// creatingWords says a runner is being made and, for one in creating,
// when the reconciler takes the create over should its worker have
// stopped (a replica that died mid-create leaves it so): without that
// moment an operator cannot tell a slow create from an orphaned one.
func creatingWords(inst *runner.Instance, takeover time.Duration, now time.Time) string {
	s := fmt.Sprintf("runner %s is being created (%s since %s)", inst.Name, inst.Status, stamp(inst.StatusChangedAt))
	if inst.Status != runner.StatusCreating || takeover <= 0 {
		return s
	}
	at := inst.StatusChangedAt.Add(takeover)
	if !at.After(now) {
		return s + fmt.Sprintf("; its worker is presumed stopped (creating longer than %s, the creating timeout plus the takeover grace): "+
			"the reconciler takes the create over on its next pass", roughly(takeover))
	}
	return s + fmt.Sprintf("; if its worker stopped (a replica that died), the reconciler takes the create over at %s "+
		"(%s in creating: the creating timeout plus the takeover grace), on its first pass after", stamp(at), roughly(takeover))
}

// previousRunner says what became of the runner made last for a job that
// backs off before its next one; nil when none was made (the job was
// kept while its pool was full, or refused by its pool's policy).
func previousRunner(last *runner.Instance) string {
	switch {
	case last == nil:
		return "no runner has been made for it yet"
	case runnerWasBusy(last.ProviderFault):
		// The fault is GitHub's answer, not the provider's: an operator's
		// forced delete completes past it (an ordinary delete is refused,
		// or retried until the runner's job ends), so nothing failed.
		return fmt.Sprintf("its previous runner %s was deleted though GitHub answered 422 to its removal, "+
			"saying it was still running a job (an operator's forced delete goes past that answer): %q", last.Name, last.ProviderFault)
	case last.ProviderFault != "":
		return fmt.Sprintf("its previous runner %s did not serve it (%s now; %s)", last.Name, last.Status, faultWords(last.ProviderFault))
	}
	return fmt.Sprintf("its previous runner %s did not serve it (%s now)", last.Name, last.Status)
}

// runnerWasBusy reports whether fault records GitHub refusing to remove a
// runner that was running a job (github.ErrRunnerBusy).
func runnerWasBusy(fault string) bool {
	return strings.Contains(fault, github.ErrRunnerBusy.Error())
}

// faultWords names a recorded fault with whose it is: GitHub's errors
// start "github: "; everything else an instance records is its
// provider's or its machine's.
func faultWords(fault string) string {
	if strings.HasPrefix(fault, "github: ") {
		return fmt.Sprintf("GitHub's fault %q", fault)
	}
	return fmt.Sprintf("fault %q", fault)
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
