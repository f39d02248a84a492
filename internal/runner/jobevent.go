package runner

import "time"

// JobAction is what an intake learned happened to a job.
type JobAction string

// The job actions runfleet acts on (GitHub's workflow_job actions).
const (
	ActionQueued     JobAction = "queued"
	ActionInProgress JobAction = "in_progress"
	ActionCompleted  JobAction = "completed"
	ActionWaiting    JobAction = "waiting"
)

// JobEvent is one thing an intake learned about a job, in runfleet's
// words: the webhook intake makes one from a workflow_job delivery, and a
// later intake (GitHub's runner scale set API) will make the same. The
// engine never sees GitHub's payload.
type JobEvent struct {
	Action     JobAction
	JobID      int64
	RunID      int64
	RunAttempt int64
	Labels     []string
	// Repository is "org/repo"; Org and Enterprise are the job's
	// organization login and enterprise slug, when it has them.
	Repository     string
	Org            string
	Enterprise     string
	InstallationID int64
	// RunnerName is the runner that took the job; "" while queued.
	RunnerName string
	// RunnerID is GitHub's id of that runner's registration (0 when the
	// event does not say): an instance whose create was retried registers
	// a new runner under the same name, and an event about the earlier
	// registration must not be taken for the new one.
	RunnerID int64
	// Conclusion is GitHub's conclusion of a completed job (an open set:
	// success, failure, cancelled, …).
	Conclusion string
	// CompletedAt is when GitHub says a completed job ended (its
	// completed_at, to the second); zero when the delivery does not say.
	// It tells a job that failed on its own from one its machine's
	// interruption failed (engine: interruptedRun).
	CompletedAt time.Time
	// Pool names the pool the job is for when the intake knows it: a
	// runner scale set is its pool, and its jobs name the scale set, not
	// an owner and labels to match. Empty (every webhook event): the pool
	// is matched by the job's owner and labels.
	Pool string
	// Seq is where a scale-set event stood in its scale set's message
	// queue, and AssignedAt the scaleSetAssignTime it carries: the
	// assignment it is about. Both zero when the intake does not know
	// them (every webhook event). They let the ledger tell a message the
	// broker delivered late from news (staleJobEvent).
	Seq        MessageSeq
	AssignedAt time.Time
}
