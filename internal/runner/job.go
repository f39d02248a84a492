package runner

import (
	"fmt"
	"time"
)

// Job is demand: one run attempt of a GitHub Actions job that wants a
// runner from one of runfleet's pools. It is the ledger record
// (JOB#<id>#<run attempt>) that outlives the instances made for it: while
// it is open, supply follows it — when the instance made for it ends for
// any reason, another is made (with backoff) for as long as the job is
// still queued in GitHub. Any intake feeds it (webhooks today; GitHub's
// runner scale set API next), so nothing here is shaped by a payload.
type Job struct {
	ID         int64 `json:"id"`
	RunAttempt int64 `json:"run_attempt"`
	// Pool serves the job (the first pool matching its owner and labels).
	Pool string `json:"pool"`
	// Owner is the pool's runner scope at intake; Repository ("org/repo")
	// is where the job runs, which is where GitHub is asked about it.
	Owner      Owner  `json:"owner"`
	Repository string `json:"repository,omitempty"`
	// RunID is the job's workflow run (0 for jobs recorded before it was
	// kept): a re-run makes the run's next attempt, which is how a repeated
	// re-run call learns whether the first one took effect.
	RunID          int64    `json:"run_id,omitempty"`
	InstallationID int64    `json:"installation_id,omitempty"`
	Labels         []string `json:"labels,omitempty"`

	Status JobStatus `json:"status"`
	// Instance names the live instance made for the job, at most one at a
	// time; "" when there is none (not made yet, or it ended).
	Instance string `json:"instance,omitempty"`
	// Made counts the instances made for the job; the next is named
	// InstanceFor(Made+1), so a replacement is deterministic too.
	Made int `json:"made"`
	// NextAttemptAt is the earliest time the next instance may be made
	// (backoff after one ended without serving the job).
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// CheckedMade is the value of Made when GitHub was last asked whether
	// the job is still queued: a replacement asks once per ended instance,
	// never once per retry while the pool is full.
	CheckedMade int `json:"checked_made,omitempty"`
	// RunnerName is the runner GitHub gave the job to, once known;
	// Conclusion is GitHub's conclusion once completed.
	RunnerName string `json:"runner_name,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
	// QueuedAt is when the job was first queued: GitHub cancels a
	// self-hosted job that stays queued for QueueLimit.
	QueuedAt time.Time `json:"queued_at"`

	// CompletedAt is GitHub's completed_at for a completed job (zero when
	// not known): with InterruptedSince it tells a job the interruption
	// failed from one that failed on its own.
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// Interrupted names the instance whose machine the provider took back
	// (a spot interruption) while its runner ran this job — the job its
	// runner was bound to by in_progress, whichever job the instance was
	// made for. It is set with the move to JobRerun, or earlier, when the
	// interruption is learnt before the job's completed (the instance may
	// be deleted by then); InterruptedSince is the interruption's start
	// (Instance.InterruptedSince). RerunCalls counts the re-run calls started — each one
	// recorded (compare-and-set) BEFORE GitHub is asked — and
	// RerunRequestedAt is when the last started. RerunOutcome is how the
	// re-run ended: RerunDone, RerunRefused or RerunFailed.
	Interrupted      string    `json:"interrupted,omitempty"`
	InterruptedSince time.Time `json:"interrupted_since,omitzero"`
	RerunCalls       int       `json:"rerun_calls,omitempty"`
	RerunRequestedAt time.Time `json:"rerun_requested_at,omitzero"`
	RerunOutcome     string    `json:"rerun_outcome,omitempty"`

	// Delivery is the id of the delivery (X-GitHub-Delivery) whose event
	// created the record, and DeliverySource the intake it came through
	// (a webhook, or the delivery log when the reconciler recovered it):
	// the key to search GitHub's delivery log by. Later deliveries about
	// the job are not kept; their effects are the record's statuses.
	Delivery       string `json:"delivery,omitempty"`
	DeliverySource string `json:"delivery_source,omitempty"`
	// Unmatched says, for a job no pool matched (JobUnmatched), why:
	// UnmatchedReason is the metric's reason (an Unmatched* constant),
	// UnmatchedDetail the same in words — the labels no pool has, and the
	// nearest pool and what it lacks.
	UnmatchedReason string `json:"unmatched_reason,omitempty"`
	UnmatchedDetail string `json:"unmatched_detail,omitempty"`

	// ScaleSetSeq is the place in its scale set's queue of the latest
	// scale-set event that moved the job's demand (queued, waiting), and
	// AssignedAt the latest scaleSetAssignTime a JobAssigned gave it:
	// what the ledger knows of the job's newest news. A late duplicate
	// (the broker redelivers a message after later ones) comes from an
	// earlier place or an earlier assignment, and changes nothing. Zero
	// for a webhook job.
	ScaleSetSeq MessageSeq `json:"scale_set_seq,omitzero"`
	AssignedAt  time.Time  `json:"assigned_at,omitzero"`

	// Version increases by one on every write; writes are compare-and-set.
	Version         int64     `json:"version"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	// ExpiresAt is set once the job is closed or expired: the record is kept
	// until then so a late or redelivered event finds it and makes nothing.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// QueueLimit is how long GitHub keeps a self-hosted job queued before it
// cancels it.
const QueueLimit = 24 * time.Hour

// JobKey names a job's run attempt: "<job id>#<run attempt>".
func JobKey(id, runAttempt int64) string {
	return fmt.Sprintf("%d#%d", id, max(runAttempt, 1))
}

// Key is the job's ledger key (JobKey).
func (j *Job) Key() string { return JobKey(j.ID, j.RunAttempt) }

// GitHubOwner is the job's owner authenticated as the installation that
// delivered it: what a call to GitHub about the job names.
func (j *Job) GitHubOwner() Owner { return j.Owner.WithInstallation(j.InstallationID) }

// InstanceFor names the n-th instance made for the job (1-based). The
// first keeps the historical name InstanceName(pool, id, attempt), so the
// first runner of a job is named as it always was.
func (j *Job) InstanceFor(n int) string {
	name := InstanceName(j.Pool, j.ID, j.RunAttempt)
	if n <= 1 {
		return name
	}
	return fmt.Sprintf("%s-r%d", name, n)
}

// Clone returns a deep copy.
func (j *Job) Clone() *Job {
	if j == nil {
		return nil
	}
	out := *j
	out.Labels = append([]string(nil), j.Labels...)
	return &out
}

// Transition returns a copy of j moved to status to, with timestamps set,
// or an *IllegalTransitionError. It writes nothing.
func (j *Job) Transition(to JobStatus, now time.Time) (*Job, error) {
	if err := CheckJobTransition(j.Key(), j.Status, to); err != nil {
		return nil, err
	}
	next := j.Clone()
	if next.Status != to {
		next.StatusChangedAt = now
	}
	next.Status = to
	next.UpdatedAt = now
	return next, nil
}

// JobStatus is where a job's demand stands.
type JobStatus string

const (
	// JobOpen: queued in GitHub; wants a runner.
	JobOpen JobStatus = "open"
	// JobWaiting: held by an environment's protection rules; wants no
	// runner until it is queued again.
	JobWaiting JobStatus = "waiting"
	// JobServed: a runner took it (in_progress); no more runners for it.
	JobServed JobStatus = "served"
	// JobClosed: completed (succeeded, failed or cancelled).
	JobClosed JobStatus = "closed"
	// JobExpired: queued longer than QueueLimit; GitHub has cancelled it.
	JobExpired JobStatus = "expired"
	// JobRerun: completed (failed or cancelled) because the provider took
	// its machine back (a spot interruption); runfleet owes GitHub one
	// re-run of it, and closes it once that is asked for. Demand is
	// settled: the re-run is a new run attempt, a new job record.
	JobRerun JobStatus = "rerun"
	// JobUnmatched: queued in GitHub for labels (or an owner) no pool
	// serves. No runner is made for it; it is recorded so that it is seen
	// (jobs list, the status page, metrics, runfleet why) rather than only
	// logged. A later queued that a pool matches (the config was fixed)
	// opens it; GitHub cancels it after QueueLimit, when it expires like
	// any open job.
	JobUnmatched JobStatus = "unmatched"
)

// How a re-run owed for an interrupted job ended (Job.RerunOutcome).
const (
	// RerunDone: GitHub accepted the re-run.
	RerunDone = "done"
	// RerunRefused: GitHub refused it for the run's state — an attempt of
	// the run is going already (an earlier call of ours that GitHub
	// received before a crash, or a person's re-run).
	RerunRefused = "refused"
	// RerunFailed: it cannot succeed by retrying (the job is gone, the App
	// lacks "Actions: Read and write").
	RerunFailed = "failed"
)

// AllJobStatuses lists every job status.
var AllJobStatuses = []JobStatus{JobOpen, JobWaiting, JobServed, JobClosed, JobExpired, JobRerun, JobUnmatched}

// Valid reports whether s is a known job status.
func (s JobStatus) Valid() bool {
	for _, known := range AllJobStatuses {
		if s == known {
			return true
		}
	}
	return false
}

// WantsRunner reports whether demand is open: only an open job is served.
func (s JobStatus) WantsRunner() bool { return s == JobOpen }

// Final reports whether nothing will ever change for the job again, and
// its record only waits to expire.
func (s JobStatus) Final() bool { return s == JobClosed || s == JobExpired }

// jobTransitions is THE table of legal job status changes. Demand only
// closes: once served, closed or expired a job never asks for a runner
// again (GitHub makes a new run attempt, which is a new job record).
var jobTransitions = map[JobStatus][]JobStatus{
	// -> rerun from open and waiting too: the in_progress of a job that
	// failed on an interrupted machine may never have been delivered.
	JobOpen:    {JobWaiting, JobServed, JobClosed, JobExpired, JobRerun},
	JobWaiting: {JobOpen, JobServed, JobClosed, JobExpired, JobRerun},
	JobServed:  {JobClosed, JobRerun},
	// unmatched -> open: a queued that a pool now matches (the config was
	// fixed while GitHub still held the job). Served and closed: a runner
	// runfleet does not manage took it, or it was cancelled.
	JobUnmatched: {JobOpen, JobServed, JobClosed, JobExpired},
	// A job owed a re-run closes once GitHub was asked (RerunOutcome).
	JobRerun: {JobClosed},
	// A completed that arrives after runfleet expired the job closes it.
	JobExpired: {JobClosed},
	// closed -> rerun: the interruption of the machine the job ran on was
	// learnt only after its completed (a poll that failed for as long as
	// GitHub took to give up on the runner). Once only: the engine moves a
	// job there only if no re-run was ever owed (Interrupted is empty).
	JobClosed: {JobRerun},
}

// jobTable is the job table as the generic check sees it: staying in the
// same status (a write of other fields) is legal for every status that is
// not final.
var jobTable = Transitions[JobStatus]{
	kind: "job", next: jobTransitions,
	stays: func(s JobStatus) bool { return s.Valid() && !s.Final() },
}

// CanJobTransition reports whether a job may move from one status to
// another.
func CanJobTransition(from, to JobStatus) bool { return jobTable.Can(from, to) }

// CheckJobTransition returns an *IllegalTransitionError unless from -> to
// is legal for the job key.
func CheckJobTransition(key string, from, to JobStatus) error {
	return jobTable.Check(key, from, to)
}
