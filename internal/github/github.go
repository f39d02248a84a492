// Package github is runfleet's port to GitHub: registering just-in-time
// runners and removing them. The engine depends only on the GitHub interface;
// the go-github client and the in-process simulation implement it.
package github

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// GitHub is what the engine needs from GitHub.
type GitHub interface {
	// GenerateJITConfig registers a just-in-time runner and returns its id and
	// encoded configuration (a secret: never log it, never put it in user data).
	GenerateJITConfig(ctx context.Context, req JITRequest) (*JITConfig, error)
	// RemoveRunner deregisters a runner. Removed and not-found are both nil.
	// A runner running a job returns ErrRunnerBusy: its machine must not be
	// destroyed. Rate limits return *RateLimitError.
	RemoveRunner(ctx context.Context, ref RunnerRef) error
	// ListRunners returns the runners registered at an owner.
	ListRunners(ctx context.Context, owner Owner) ([]Runner, error)
	// RunnerDownloads lists the runner application builds GitHub offers
	// the owner's machines, one per OS and architecture. The list changes
	// only when GitHub releases a runner: callers should cache it.
	RunnerDownloads(ctx context.Context, owner Owner) ([]RunnerDownload, error)
	// GetJob reads one workflow job's state (GET
	// /repos/{owner}/{repo}/actions/jobs/{job_id}). The engine asks only
	// about a job whose instance ended without serving it — one call per
	// failed instance, never one per healthy job — and about a busy
	// runner's job before reaping it. A job GitHub does not know returns
	// ErrJobNotFound.
	GetJob(ctx context.Context, ref JobRef) (*Job, error)
	// RerunJob re-runs one workflow job and the jobs that depend on it
	// (POST /repos/{owner}/{repo}/actions/jobs/{job_id}/rerun; the App
	// needs "Actions: Read and write"). GitHub makes a new run attempt with
	// a new job id, queued again. A re-run GitHub refuses because of the
	// run's state — an attempt of the run still going (a re-run already
	// made, by us or a person), or a run too old to re-run — returns an
	// error matching ErrRerunRefused; a job it does not know,
	// ErrJobNotFound.
	RerunJob(ctx context.Context, ref JobRef) error
	// RunJobs lists a workflow run's jobs of every attempt (GET
	// /repos/{owner}/{repo}/actions/runs/{run_id}/jobs?filter=all), each
	// with its id, attempt, status, conclusion and runner: a re-run makes
	// the next attempt. The engine asks before repeating a re-run call
	// whose outcome it never learnt (the run's latest attempt), and to find
	// the REST id of a scale-set job — whose messages name it only by its
	// runner request — by the runner that ran it. A run GitHub does not
	// know returns ErrJobNotFound.
	RunJobs(ctx context.Context, ref RunRef) ([]Job, error)
}

// RunRef names a workflow run: its repository ("org/repo"), its id, and
// the owner whose App installation may read it.
type RunRef struct {
	Owner      Owner
	Repository string
	ID         int64
}

// ErrRerunRefused: GitHub refused to re-run a job (403) for the state of
// its workflow run, not for a missing permission. Retrying the same call
// does not help; the run is either being re-run already or cannot be.
var ErrRerunRefused = errors.New("github: re-run refused")

// JobRef names a workflow job: its repository ("org/repo"), its id, and
// the owner whose App installation may read it.
type JobRef struct {
	Owner      Owner
	Repository string
	ID         int64
	// RunID is the job's workflow run, when known (GitHub's job carries
	// it): a re-run of the job makes the run's next attempt.
	RunID int64
}

// Job is a workflow job as GitHub's REST API reports it.
type Job struct {
	ID         int64
	RunAttempt int64
	// Status is GitHub's: queued, in_progress, completed, waiting,
	// requested or pending.
	Status string
	// Conclusion is set once completed (an open set of values).
	Conclusion string
	// RunnerName is the runner that took the job; "" while queued.
	RunnerName string
}

// Job statuses (GitHub's) the engine decides on.
const (
	JobQueued     = "queued"
	JobInProgress = "in_progress"
	JobCompleted  = "completed"
	JobWaiting    = "waiting"
)

// ErrJobNotFound: GitHub does not know the job (404).
var ErrJobNotFound = errors.New("github: workflow job not found")

// Owner is where runners register. It is the domain's owner (runner.Owner):
// the port speaks of the same thing, by the same name, as os.FileMode does
// of fs.FileMode.
type Owner = runner.Owner

// ParseOwner reads "org", "org/repo" or "enterprise:slug" (runner.ParseOwner).
func ParseOwner(s string) (Owner, error) { return runner.ParseOwner(s) }

// JITRequest asks for one just-in-time runner.
type JITRequest struct {
	Owner       Owner
	Name        string
	Labels      []string
	RunnerGroup string // by name; "" means the default group
	WorkFolder  string
	// Pool is the pool the runner is for. The REST client ignores it; a
	// port that registers some pools' runners elsewhere (a scale set's,
	// through the scale set) routes by it.
	Pool string
}

// JITConfig is a registered JIT runner.
type JITConfig struct {
	RunnerID         int64
	EncodedJITConfig string
}

// RunnerRef names a runner to remove: by id when known, else by name.
type RunnerRef struct {
	Owner Owner
	ID    int64
	Name  string
	// Pool is the pool the runner was made for, when known (see
	// JITRequest.Pool); "" removes it through the REST API.
	Pool string
}

// Runner is a registered runner as GitHub lists it.
type Runner struct {
	ID     int64
	Name   string
	Status string // online or offline
	Busy   bool
	Labels []string
}

// RunnerDownload is one build of the runner application, as GitHub's
// "list runner applications" endpoints describe it. OS is GitHub's name
// (linux, osx, win), Architecture too (x64, arm, arm64).
type RunnerDownload struct {
	OS           string
	Architecture string
	DownloadURL  string
	Filename     string
	// SHA256Checksum is empty when GitHub sends none (older GHES).
	SHA256Checksum string
	// TempDownloadToken is a short-lived bearer token some GHES
	// installations require for the download: a secret, never log it.
	TempDownloadToken string
}

// ErrRunnerBusy: GitHub refused removal (422) because the runner is running
// a job. Never destroy its machine on an ordinary delete.
var ErrRunnerBusy = errors.New("github: runner is still running a job")

// RateLimitError: GitHub's primary or secondary rate limit is exhausted, or
// would be by this call; retry no earlier than RetryAt. No request was sent
// when the client refused the call itself (a penalty GitHub imposed still
// lasts, or Paced).
type RateLimitError struct {
	RetryAt   time.Time
	Secondary bool
	// Paced: GitHub refused nothing. runfleet's own budget for the
	// credential (internal/github/budget) holds the call until RetryAt,
	// before GitHub would refuse it. Retrying then costs nothing: the
	// caller should not count this as a failed attempt.
	Paced bool
	// Turn, on a paced error, is the place in line runfleet's budget
	// gave the call: its points are promised for RetryAt, and the call
	// made again then in that turn (WithTurn) goes without queueing
	// again. Only a caller that can keep a turn gets one (WithTurns).
	Turn    *Turn
	Message string
}

func (e *RateLimitError) Error() string {
	kind := "primary"
	switch {
	case e.Paced:
		return fmt.Sprintf("github: waiting for rate-limit budget, call goes at %s: %s", e.RetryAt.UTC().Format(time.RFC3339), e.Message)
	case e.Secondary:
		kind = "secondary"
	}
	return fmt.Sprintf("github: %s rate limit exceeded, retry at %s: %s", kind, e.RetryAt.UTC().Format(time.RFC3339), e.Message)
}

// ErrMisconfigured is matched (errors.Is) by errors that retrying cannot fix
// — a runner group or App installation that does not exist — so the engine
// does not spend attempts and rate limit on them.
var ErrMisconfigured = errors.New("github: misconfigured")

// PermissionError: the App or token lacks a permission the call needs.
type PermissionError struct {
	Op      string
	Message string
}

// Is makes errors.Is(err, ErrMisconfigured) true: a missing permission is
// fixed by an administrator, not by a retry.
func (e *PermissionError) Is(target error) bool { return target == ErrMisconfigured }

func (e *PermissionError) Error() string {
	return fmt.Sprintf("github: %s forbidden: %s", e.Op, e.Message)
}

// ErrRunnerNameTaken: GitHub refused a JIT config (409) because a runner with
// that name is already registered at the owner — often a runner GitHub
// created even though an earlier attempt returned an error. Look the runner
// up, remove it if it is ours and idle, and retry.
var ErrRunnerNameTaken = errors.New("github: a runner with this name already exists")
