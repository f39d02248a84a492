package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Every situation of "why is my job waiting?" is one row: the records in,
// the verdict and the facts its sentence must state out.
func TestDecideWhy(t *testing.T) {
	now := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	later := now.Add(90 * time.Second)
	job := func(status runner.JobStatus, adjust func(*runner.Job)) *runner.Job {
		j := &runner.Job{ID: 42, RunAttempt: 1, Pool: "linux", Status: status, Made: 1,
			QueuedAt: now.Add(-time.Minute), StatusChangedAt: now.Add(-time.Minute)}
		j.Instance = j.InstanceFor(1)
		if adjust != nil {
			adjust(j)
		}
		return j
	}
	inst := func(n int, status runner.Status, adjust func(*runner.Instance)) *runner.Instance {
		j := job(runner.JobOpen, nil)
		in := &runner.Instance{Name: j.InstanceFor(n), Pool: "linux", Status: status, JobID: 42, RunAttempt: 1,
			CreatedAt: now.Add(time.Duration(n) * time.Second), StatusChangedAt: now.Add(-30 * time.Second)}
		if adjust != nil {
			adjust(in)
		}
		return in
	}
	r2 := runner.InstanceName("linux", 42, 1) + "-r2"
	r3 := runner.InstanceName("linux", 42, 1) + "-r3"
	tests := []struct {
		name   string
		facts  engine.WhyFacts
		reason string
		says   []string
		next   time.Time
	}{
		{"never heard of", engine.WhyFacts{JobID: 42}, engine.WhyUnknown,
			[]string{"no record of job 42", "Recent Deliveries", "recovers failed deliveries", "labels"}, time.Time{}},
		{"matches no pool", engine.WhyFacts{Job: job(runner.JobUnmatched, func(j *runner.Job) {
			j.Pool, j.Instance, j.UnmatchedDetail = "", "", "no pool has the label x46; the nearest pool, linux, lacks x46"
		})}, string(runner.WaitUnmatched), []string{"matches no pool", "x46", "nearest pool, linux"}, time.Time{}},
		{"waiting for capacity, nothing made yet", engine.WhyFacts{Job: job(runner.JobOpen, func(j *runner.Job) { j.Made, j.Instance = 0, "" }),
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 2, Held: 2}}, string(runner.WaitCapacity),
			[]string{"capacity", "max_runners 2/2", "pool linux"}, time.Time{}},
		{"replacement waits while the previous runner is pending_delete at max_runners", engine.WhyFacts{
			Job: job(runner.JobOpen, func(j *runner.Job) { j.Made, j.Instance = 3, r3 }),
			Instances: []*runner.Instance{inst(1, runner.StatusDeleted, nil), inst(2, runner.StatusDeleted, nil),
				inst(3, runner.StatusPendingDelete, nil)},
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 1, Held: 1}}, string(runner.WaitCapacity),
			[]string{"capacity", "max_runners 1/1", r3 + " is pending_delete"}, time.Time{}},
		{"refused for capacity, retrying on its own backoff", engine.WhyFacts{
			Job:  job(runner.JobOpen, func(j *runner.Job) { j.Made, j.Instance, j.NextAttemptAt = 0, "", later }),
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 1, Held: 1}}, string(runner.WaitCapacity),
			[]string{"capacity", "max_runners 1/1", "next attempt at " + later.Format(time.RFC3339)}, later},
		{"waiting for GitHub's budget", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusPendingCreate, func(in *runner.Instance) { in.WaitingForGitHub = later })},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitGitHubBudget),
			[]string{"GitHub's API budget", later.Format(time.RFC3339)}, later},
		{"create keeps failing: instance backing off", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusPendingCreate, func(in *runner.Instance) {
				in.Attempts, in.NextAttemptAt, in.ProviderFault = 3, later, "InsufficientInstanceCapacity"
			})},
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitCreateBackoff),
			[]string{"create to be retried", `fault "InsufficientInstanceCapacity"`, "attempt 3", later.Format(time.RFC3339)}, later},
		{"create failed, instance gone, job backing off", engine.WhyFacts{
			Job:       job(runner.JobOpen, func(j *runner.Job) { j.Instance, j.NextAttemptAt = "", later }),
			Instances: []*runner.Instance{inst(1, runner.StatusDeleted, func(in *runner.Instance) { in.ProviderFault = "quota exceeded" })},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 0}}, string(runner.WaitBackoff),
			[]string{"backoff until " + later.Format(time.RFC3339), "-r2, is made", "did not serve it", `fault "quota exceeded"`}, later},
		// The README tour's step 4: the pool holds 1 of 2 slots (…-r2
		// pending_delete), so the job backs off; it does not wait for
		// capacity, and jobs list says the same word.
		{"backing off while its pool has room", engine.WhyFacts{
			Job: job(runner.JobOpen, func(j *runner.Job) { j.Made, j.Instance, j.NextAttemptAt = 2, r2, later }),
			Instances: []*runner.Instance{inst(1, runner.StatusDeleted, func(in *runner.Instance) { in.ProviderFault = "simulated delete failure" }),
				inst(2, runner.StatusPendingDelete, func(in *runner.Instance) { in.ProviderFault = "simulated delete failure" })},
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 2, Held: 1}}, string(runner.WaitBackoff),
			[]string{"backoff until", "pool linux at 1/2", r2 + " did not serve it (pending_delete now"}, later},
		// GitHub's 422 to removing a busy runner, which an operator's
		// forced delete went past, is GitHub's answer, not a provider's.
		{"backing off after a forced delete of a busy runner", engine.WhyFacts{
			Job: job(runner.JobOpen, func(j *runner.Job) { j.NextAttemptAt = later }),
			Instances: []*runner.Instance{inst(1, runner.StatusDeleted, func(in *runner.Instance) {
				in.ProviderFault = `github: runner is still running a job: 422: runner "x" is still running a job`
			})},
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 2, Held: 0}}, string(runner.WaitBackoff),
			[]string{"backoff until", "GitHub answered 422 to its removal", "still running a job", "forced delete"}, later},
		{"create failing at GitHub: GitHub's fault, not the provider's", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusPendingCreate, func(in *runner.Instance) {
				in.Attempts, in.NextAttemptAt, in.ProviderFault = 1, later, "github: misconfigured: no such app"
			})},
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitCreateBackoff),
			[]string{`GitHub's fault "github: misconfigured`}, later},
		{"runner booting", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusRunning, func(in *runner.Instance) { in.RunnerStatus = runner.RunnerInstalling })},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitBooting),
			[]string{"booting since", runner.InstanceName("linux", 42, 1)}, time.Time{}},
		{"runner being created", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusCreating, nil)},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitCreating), []string{"being created"}, time.Time{}},
		// A replica that died mid-create leaves its instance creating: the
		// answer names the moment the reconciler takes the create over.
		{"runner being created, with the takeover moment", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusCreating, nil)}, CreatingTakeover: 6 * time.Minute,
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitCreating),
			[]string{"being created", "takes the create over at " + now.Add(-30*time.Second+6*time.Minute).Format(time.RFC3339), "6m0s in creating"}, time.Time{}},
		{"runner creating past its takeover", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusCreating, nil)}, CreatingTakeover: 20 * time.Second,
			Pool: runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitCreating),
			[]string{"presumed stopped", "on its next pass"}, time.Time{}},
		{"runner online, idle", engine.WhyFacts{Job: job(runner.JobOpen, nil),
			Instances: []*runner.Instance{inst(1, runner.StatusRunning, func(in *runner.Instance) { in.RunnerStatus = runner.RunnerIdle })},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitOnline), []string{"online and idle"}, time.Time{}},
		{"next runner about to be made", engine.WhyFacts{Job: job(runner.JobOpen, func(j *runner.Job) { j.Made, j.Instance = 1, "" }),
			Instances: []*runner.Instance{inst(1, runner.StatusDeleted, nil)},
			Pool:      runner.PoolSlots{Configured: true, MaxRunners: 5, Held: 1}}, string(runner.WaitNextRunner),
			[]string{"next runner", runner.InstanceName("linux", 42, 1) + "-r2", "1/5"}, time.Time{}},
		{"pool left the config", engine.WhyFacts{Job: job(runner.JobOpen, func(j *runner.Job) { j.Instance = "" })},
			string(runner.WaitPoolGone), []string{"no longer configured"}, time.Time{}},
		{"approval", engine.WhyFacts{Job: job(runner.JobWaiting, nil)}, string(runner.WaitApproval), []string{"approval"}, time.Time{}},
		{"served", engine.WhyFacts{Job: job(runner.JobServed, func(j *runner.Job) { j.RunnerName = "rf-linux-42-1" })},
			engine.WhyServed, []string{"served by runner rf-linux-42-1"}, time.Time{}},
		{"completed", engine.WhyFacts{Job: job(runner.JobClosed, func(j *runner.Job) { j.Conclusion = "success" })},
			engine.WhyCompleted, []string{"completed (success)"}, time.Time{}},
		{"expired", engine.WhyFacts{Job: job(runner.JobExpired, nil)}, engine.WhyExpired, []string{"GitHub cancelled it"}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.Now = now
			if tt.facts.JobID == 0 {
				tt.facts.JobID = 42
			}
			got := engine.DecideWhy(tt.facts)
			if got.Reason != tt.reason || !got.NextAttemptAt.Equal(tt.next) {
				t.Fatalf("DecideWhy = %+v; want reason %s, next attempt %v", got, tt.reason, tt.next)
			}
			for _, fact := range tt.says {
				if !strings.Contains(got.Sentence, fact) {
					t.Errorf("sentence %q does not say %q", got.Sentence, fact)
				}
			}
		})
	}
}

func TestParseJobRef(t *testing.T) {
	for ref, want := range map[string]int64{
		"123":   123,
		" 456 ": 456,
		"https://github.com/octo/app/actions/runs/99/job/789":        789,
		"https://github.com/octo/app/actions/runs/99/job/789?pr=3":   789,
		"https://ghe.example.com/octo/app/actions/runs/99/jobs/1011": 1011,
	} {
		if got, err := engine.ParseJobRef(ref); err != nil || got != want {
			t.Errorf("ParseJobRef(%q) = %d, %v; want %d", ref, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-4", "abc", "https://github.com/octo/app/actions/runs/99"} {
		if _, err := engine.ParseJobRef(bad); err == nil {
			t.Errorf("ParseJobRef(%q) accepted", bad)
		}
	}
}
