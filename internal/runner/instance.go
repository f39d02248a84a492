package runner

import (
	"fmt"
	"strings"
	"time"
)

// Instance is one ephemeral runner: the record of the machine a provider runs
// for one queued job, and of the GitHub runner registered on it.
type Instance struct {
	// Name is deterministic per job id and run attempt (see InstanceName), so a
	// redelivered webhook or a duplicated message can never make a second one.
	Name         string       `json:"name"`
	Pool         string       `json:"pool"`
	Status       Status       `json:"status"`
	RunnerStatus RunnerStatus `json:"runner_status"`

	// JobID and RunAttempt name the queued job this instance was created for.
	JobID      int64 `json:"job_id"`
	RunAttempt int64 `json:"run_attempt"`
	// JobQueuedAt is when that job was queued (runner.Job.QueuedAt), kept
	// here so each stage of its queue time is measured without reading the
	// ledger; zero for warm runners and instances of older releases.
	JobQueuedAt time.Time `json:"job_queued_at,omitzero"`
	// Repository ("org/repo") is the queued job's repository, for cost per
	// repository: Owner may be an organization's runner scope.
	Repository string `json:"repository,omitempty"`
	// ActiveJobID is the job the runner actually picked up (GitHub may hand
	// any matching runner any queued job), set by the in_progress event.
	ActiveJobID int64 `json:"active_job_id,omitempty"`
	// ActiveRunAttempt is the run attempt of ActiveJobID: with it the job
	// the runner ran is found in the ledger (runner.JobKey).
	ActiveRunAttempt int64 `json:"active_run_attempt,omitempty"`

	// Owner is the GitHub scope the runner registers at (stored as "org",
	// "org/repo" or "enterprise:slug"). InstallationID is the GitHub App
	// installation that delivered the job, used to authenticate calls for
	// it: GitHubOwner joins the two.
	Owner          Owner    `json:"owner"`
	InstallationID int64    `json:"installation_id,omitempty"`
	Labels         []string `json:"labels,omitempty"`

	GitHubRunnerID int64 `json:"github_runner_id,omitempty"`
	// RunnerRemoved is set once GitHub confirmed the runner deregistered
	// (removed, or not found) during a delete whose later step failed: the
	// delete's retries go straight to the machine instead of asking GitHub
	// again each time (a provider failing for minutes cost a job 60 calls).
	RunnerRemoved bool `json:"runner_removed,omitempty"`
	// NotBusySince is when the reconciler first saw this active runner not
	// busy (or no longer listed) in GitHub. GitHub has been seen reporting
	// busy:false minutes into a job, so one reading never reaps a runner:
	// a second one a confirmation window later does. Zero otherwise.
	NotBusySince time.Time `json:"not_busy_since,omitzero"`
	ProviderID   string    `json:"provider_id,omitempty"`
	// MachineType and Market are what the provider made (EC2: the instance
	// type after any failover, spot or on-demand); MachineAt is when the
	// create that made it started. Together with the delete's time they
	// price the machine (Cost). Empty when the provider does not say.
	MachineType string    `json:"machine_type,omitempty"`
	Market      string    `json:"market,omitempty"`
	MachineAt   time.Time `json:"machine_at,omitzero"`
	// Cost is set once, when the instance is deleted (CostOf); nil before,
	// and on records of older releases.
	Cost *Cost `json:"cost,omitempty"`
	// ProviderFault is the provider's last error text, kept so an operator can
	// read why an instance failed without digging through logs.
	ProviderFault string `json:"provider_fault,omitempty"`
	// Interruption is set when the provider warned that it takes the
	// machine back (InterruptionSpot: a job failing on it is re-run once)
	// or recommended moving off it (InterruptionRebalance: recorded only);
	// InterruptedAt is when the warning was given (or, polled, first
	// seen). InterruptedSince is the earliest a job on the machine can
	// have failed because of the interruption (the warning's time; zero
	// when not known): a job that completed before it failed on its own.
	Interruption     Interruption `json:"interruption,omitempty"`
	InterruptedAt    time.Time    `json:"interrupted_at,omitzero"`
	InterruptedSince time.Time    `json:"interrupted_since,omitzero"`

	// Attempts counts failed delete (or create) attempts; NextAttemptAt is when
	// the next retry is due. Both are visible so a retrying instance is never
	// silently stuck (lessons-from-peers P5).
	Attempts      int       `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// WaitingForGitHub is set on a pending_create instance whose create
	// waits for GitHub's API budget — held by runfleet's pacing, or refused
	// by GitHub's rate limit — until then. Waiting is not failing: no
	// create attempt is used and no fault recorded.
	WaitingForGitHub time.Time `json:"waiting_for_github,omitzero"`
	// Claim names the work that holds the instance in creating or deleting:
	// the queue message, and which receive of it, that claimed it
	// (engine.WithDelivery); ClaimUntil is when that work has stopped for
	// certain (its deadline plus a clean-up grace; zero: unbounded). A later
	// try of the same message finds its own claim and takes the work over,
	// rather than call it stale and leave it to the reconciler's timeout
	// (issue #32). A change of status ends the claim.
	Claim      string    `json:"claim,omitempty"`
	ClaimUntil time.Time `json:"claim_until,omitzero"`
	// CreateAttempt increases each time a create is started; instance tokens
	// name it so a token from an earlier attempt is refused.
	CreateAttempt int `json:"create_attempt"`

	// Version increases by one on every write; writes are compare-and-set on it.
	Version int64 `json:"version"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// StatusChangedAt is when Status last changed; the reconciler measures
	// "stuck" from it.
	StatusChangedAt time.Time `json:"status_changed_at"`
	// ExpiresAt is set once deleted: the record is kept until then so a late
	// redelivery of the queued webhook cannot create a second runner.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// InstanceName is the one name for the instance serving a job's run attempt.
func InstanceName(pool string, jobID, runAttempt int64) string {
	if runAttempt < 1 {
		runAttempt = 1
	}
	return fmt.Sprintf("%s%s-%d-%d", NamePrefix, sanitize(pool), jobID, runAttempt)
}

// WarmInstanceName names an instance a pool keeps idle for jobs to come
// (min_idle). It has no job, so its name carries a random suffix instead.
func WarmInstanceName(pool, suffix string) string {
	return fmt.Sprintf("%s%s-warm-%s", NamePrefix, sanitize(pool), suffix)
}

// sanitize keeps a pool name usable inside a runner and machine name.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// GitHubOwner is the instance's owner authenticated as its installation:
// what a call to GitHub about its runner names.
func (in *Instance) GitHubOwner() Owner { return in.Owner.WithInstallation(in.InstallationID) }

// Clone returns a deep copy, so a caller can prepare the next version of an
// instance without touching the one it read.
func (in *Instance) Clone() *Instance {
	if in == nil {
		return nil
	}
	out := *in
	out.Labels = append([]string(nil), in.Labels...)
	if in.Cost != nil {
		c := *in.Cost
		out.Cost = &c
	}
	return &out
}

// Transition returns a copy of in moved to status to, with timestamps set, or
// an *IllegalTransitionError. It does not write anything.
func (in *Instance) Transition(to Status, now time.Time) (*Instance, error) {
	if err := CheckTransition(in.Name, in.Status, to); err != nil {
		return nil, err
	}
	next := in.Clone()
	if next.Status != to {
		next.StatusChangedAt = now
		next.Claim, next.ClaimUntil = "", time.Time{}
	}
	next.Status = to
	next.UpdatedAt = now
	return next, nil
}

// Interruption is what a provider said about taking a machine back.
type Interruption string

const (
	// InterruptionSpot: the machine is reclaimed (EC2's two-minute spot
	// interruption warning, or a polled state that says so).
	InterruptionSpot Interruption = "interruption"
	// InterruptionRebalance: the machine is at elevated risk of being
	// reclaimed (EC2's rebalance recommendation).
	InterruptionRebalance Interruption = "rebalance"
)

// Valid reports whether k is a known interruption kind.
func (k Interruption) Valid() bool { return k == InterruptionSpot || k == InterruptionRebalance }
