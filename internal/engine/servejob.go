package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// serveJob handles a serve_job message: the job's next instance, if it is
// still open and nothing covers it.
func (e *Engine) serveJob(ctx context.Context, msg Message) error {
	log := withEvent(e.log, msg.event()).With("job_id", msg.JobID, "job", msg.JobKey)
	job, err := e.store.GetJob(ctx, msg.JobKey)
	if errors.Is(err, store.ErrJobNotFound) {
		log.Debug("serve_job for a job the ledger no longer holds; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s: %w", msg.JobKey, err)
	}
	_, err = e.supply(ctx, log.With("pool", job.Pool), job, supplyCall{
		event: msg.event(), verify: e.stillQueued, attempt: msg.Attempt, retry: true, notBefore: msg.NotBefore,
	})
	return err
}

// serveJobOf re-serves the job an instance was made for, after the engine
// itself ended that instance (a failed create, a runner that never came
// online, a delete of a runner that ran nothing). Failure here is only
// logged: the reconciler serves every open job on its next pass.
func (e *Engine) serveJobOf(ctx context.Context, log *slog.Logger, inst *runner.Instance) {
	if inst.JobID == 0 {
		return
	}
	key := runner.JobKey(inst.JobID, inst.RunAttempt)
	job, err := e.store.GetJob(ctx, key)
	if errors.Is(err, store.ErrJobNotFound) {
		return
	}
	if err == nil && job.Status.WantsRunner() {
		_, err = e.supply(ctx, log, job, supplyCall{verify: e.stillQueued, schedule: true})
	}
	if err != nil {
		log.Warn("serving the job again failed; the reconciler retries", "job", key, "error", err)
	}
}

// stillQueued asks GitHub, once per ended instance, whether a job is still
// queued before another instance is made for it. GitHub's answer settles
// the job (in progress: served; completed: closed; unknown to GitHub:
// closed). When GitHub cannot answer, the job is served anyway: a spare
// runner costs a machine for a while, a lost job costs a user's run.
func (e *Engine) stillQueued(ctx context.Context, job *runner.Job) (jobAnswer, error) {
	if !askableByREST(job) {
		return jobAnswer{}, nil
	}
	got, err := e.github.GetJob(ctx, github.JobRef{Owner: job.GitHubOwner(), Repository: job.Repository, ID: job.ID})
	switch {
	case errors.Is(err, github.ErrJobNotFound):
		return jobAnswer{Status: runner.JobClosed}, nil
	case err != nil:
		e.log.Warn("GitHub could not say whether the job is still queued; serving it", "job_id", job.ID, "error", err)
		return jobAnswer{}, nil
	}
	answer := jobAnswer{RunnerName: got.RunnerName}
	switch got.Status {
	case github.JobInProgress:
		answer.Status = runner.JobServed
	case github.JobCompleted:
		answer.Status = runner.JobClosed
	case github.JobWaiting:
		answer.Status = runner.JobWaiting
	}
	return answer, nil
}

// askableByREST reports whether GitHub's REST API can be asked about job
// by its ledger id: a webhook job, whose id is the REST workflow-job id,
// with its owner and repository. A scale-set job's ledger id is its runner
// request, no REST id; GitHub's statistics (the listener) settle what it
// no longer counts.
func askableByREST(job *runner.Job) bool {
	_, scaleSet := runner.RunnerRequestID(job.ID)
	return !scaleSet && !job.Owner.IsZero() && job.Repository != ""
}
