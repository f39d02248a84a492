package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// rerunInFlight is how long a re-run call recorded on a job belongs to the
// worker that recorded it. Another delivery of the work within it waits
// rather than calling too; after it, the recording worker is presumed
// dead, and the call is made again (see rerunJob on why that is safe).
const rerunInFlight = time.Minute

func rerunMessage(job *runner.Job, meta EventMeta) Message {
	return Message{Kind: KindRerunJob, JobKey: job.Key(), JobID: job.ID}.withEvent(meta)
}

// interruptedRun reports whether a completed job ended by failing (or
// being cancelled) on a runner whose machine the provider took back: the
// job runfleet owes one re-run. The interruption is known from the
// runner's instance (marked by the warning) or from the job itself, which
// carries it when it was learnt after the instance was gone (a forced
// delete before the poll saw the machine taken back; interruption_job.go).
func (lg *Ledger) interruptedRun(ctx context.Context, log *slog.Logger, ev runner.JobEvent) (bool, error) {
	if ev.RunnerName == "" || !failedOrCancelled(ev.Conclusion) {
		return false, nil
	}
	inst, err := lg.ourInstance(ctx, ev.RunnerName)
	if err != nil {
		return false, fmt.Errorf("read instance %s: %w", ev.RunnerName, err)
	}
	if inst == nil {
		return false, nil
	}
	since, interrupted := inst.InterruptedSince, inst.Interruption == runner.InterruptionSpot
	if !interrupted {
		job, err := lg.store.GetJob(ctx, runner.JobKey(ev.JobID, ev.RunAttempt))
		if errors.Is(err, store.ErrJobNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read job %d: %w", ev.JobID, err)
		}
		since, interrupted = job.InterruptedSince, job.Interrupted == inst.Name
	}
	if !interrupted {
		return false, nil
	}
	if !failedByInterruption(ev.Conclusion, ev.CompletedAt, since) {
		log.Info("job failed on its own before its machine was warned of the interruption; not re-run",
			"instance", inst.Name, "conclusion", ev.Conclusion, "completed_at", ev.CompletedAt, "interrupted_since", since)
		return false, nil
	}
	return true, nil
}

// failedOrCancelled: the conclusions an interruption ends a job with.
func failedOrCancelled(conclusion string) bool {
	return conclusion == "failure" || conclusion == "cancelled"
}

// failedByInterruption is the rule: a job that failed (or was cancelled)
// and whose completion (GitHub's completed_at) is at or after the
// interruption's start (the warning) was failed by it and is re-run; one
// that completed before it failed on its own and is not. An unknown
// completion or start (zero) counts as the interruption's. A job the
// interruption failed completes after the termination, two minutes past
// the warning, so clocks that disagree by less than that cannot cost it
// its re-run; a job that fails on its own within the two minutes looks
// like one the interruption failed, and is re-run.
func failedByInterruption(conclusion string, completedAt, since time.Time) bool {
	if !failedOrCancelled(conclusion) {
		return false
	}
	return completedAt.IsZero() || since.IsZero() || !completedAt.Before(since)
}

// rerunJob asks GitHub, once, to re-run a job that failed because its
// machine was interrupted. The ledger is written BEFORE GitHub is called
// (RerunCalls, a compare-and-set only one worker wins), and the job is
// closed with the outcome after; so:
//
//   - a redelivered message, or one of several sent for the job (each
//     completed delivery and the instance's delete send one), finds the job
//     closed, or a call in flight, and does nothing;
//   - a crash between the record and the call, or between the call and the
//     outcome, leaves the job in rerun with a call recorded: once
//     rerunInFlight has passed, the next delivery calls again. If the
//     first call never reached GitHub, this one re-runs the job; if it
//     did, GitHub refuses this one (403: an attempt of the run is queued or
//     running), which is recorded as RerunRefused — one re-run either way.
//     Only a re-run attempt that ran to completion within that window
//     could be re-run a second time.
func (e *Engine) rerunJob(ctx context.Context, msg Message) error {
	log := withEvent(e.log, msg.event()).With("job_id", msg.JobID, "job_key", msg.JobKey)
	job, err := e.store.GetJob(ctx, msg.JobKey)
	if errors.Is(err, store.ErrJobNotFound) {
		log.Debug("re-run message for a job the ledger no longer has; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s: %w", msg.JobKey, err)
	}
	log = log.With("pool", job.Pool, "instance", job.Interrupted, "run_attempt", job.RunAttempt)
	if job.Status != runner.JobRerun {
		log.Debug("re-run message is stale; the job's re-run was asked for already", "rerun_outcome", job.RerunOutcome)
		return nil
	}
	// A message that names the job's last call (Attempt) comes from the
	// worker that made it and saw it fail: that call is over, not in
	// flight.
	if job.RerunCalls > 0 && msg.Attempt != job.RerunCalls {
		if wait := job.RerunRequestedAt.Add(rerunInFlight).Sub(e.now()); wait > 0 {
			log.Debug("another worker's re-run call is in flight; looking again after it", "retry_in", wait.String())
			return e.send(ctx, msg, wait)
		}
	}
	claimed, won, err := e.mutateJob(ctx, job.Key(), job, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Status != runner.JobRerun || cur.RerunCalls != job.RerunCalls {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.RerunCalls++
		next.RerunRequestedAt, next.UpdatedAt = e.now(), e.now()
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("record the re-run call of job %s: %w", job.Key(), err)
	}
	if !won {
		log.Debug("another worker took the re-run call")
		return nil
	}
	outcome, err := e.callRerun(ctx, claimed)
	if err != nil {
		return e.retryRerun(ctx, log, msg, claimed, err)
	}
	_, closed, err := e.mutateJob(ctx, claimed.Key(), claimed, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Status != runner.JobRerun {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.JobClosed, e.now())
		if err != nil {
			return nil, err
		}
		next.RerunOutcome = outcome
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("record the re-run of job %s: %w", job.Key(), err)
	}
	if closed {
		e.logRerun(log, outcome, claimed.RerunCalls)
	}
	return nil
}

// rerunRetryFirst is how soon a failed re-run call is repeated; each
// further failure doubles it, up to rerunInFlight.
const rerunRetryFirst = 5 * time.Second

// retryRerun repeats a failed re-run call soon, by a message naming the
// call (so it is not taken for one in flight). A failed call may have
// reached GitHub anyway — a 5xx after the effect, a timeout — and made the
// new attempt: the repeat is then refused (403) only while that attempt
// is queued or running, so it must come before the attempt could have
// run to its end. Left to the queue's redelivery it came after the
// visibility timeout (5 minutes in serve), in which a short job's re-run
// attempt finishes, and the job was re-run twice. A new attempt needs a
// runner made and booted before it even starts, so a repeat within
// seconds is refused; the doubling keeps a GitHub outage from costing a
// call every few seconds.
func (e *Engine) retryRerun(ctx context.Context, log *slog.Logger, msg Message, claimed *runner.Job, callErr error) error {
	delay := min(rerunRetryFirst<<min(claimed.RerunCalls-1, 8), rerunInFlight)
	var limited *github.RateLimitError
	if errors.As(callErr, &limited) {
		delay = max(delay, limited.RetryAt.Sub(e.now()))
	}
	retry := msg
	retry.Attempt = claimed.RerunCalls
	if err := e.send(ctx, retry, delay); err != nil {
		// Left for redelivery: that delivery waits out rerunInFlight and
		// calls again.
		return fmt.Errorf("re-run job %s: %w (and its retry was not sent: %v)", claimed.Key(), callErr, err)
	}
	log.Warn("re-run call failed; repeating it soon", "error", callErr, "rerun_calls", claimed.RerunCalls, "retry_in", delay.String())
	return nil
}

// callRerun makes the one GitHub call and names its outcome; an error is
// transient (retry), every other answer is final.
func (e *Engine) callRerun(ctx context.Context, job *runner.Job) (string, error) {
	if job.Owner.IsZero() || job.Repository == "" {
		return runner.RerunFailed, nil
	}
	owner := job.GitHubOwner()
	run := github.RunRef{Owner: owner, Repository: job.Repository, ID: job.RunID}
	ref := github.JobRef{Owner: owner, Repository: job.Repository, ID: job.ID, RunID: job.RunID}
	attempt := job.RunAttempt
	var runJobs []github.Job
	if _, scaleSet := runner.RunnerRequestID(job.ID); scaleSet {
		rest, jobs, outcome, err := e.scaleSetJob(ctx, run, job)
		if outcome != "" || err != nil {
			return outcome, err
		}
		ref.ID, attempt, runJobs = rest.ID, rest.RunAttempt, jobs
	}
	if job.RerunCalls > 1 && job.RunID != 0 {
		// An earlier call's outcome was never learnt (a crash, an error
		// after the effect). Its re-run attempt may already have run to
		// its end, and GitHub would then take this call too: ask first.
		done, err := e.rerunMadeAlready(ctx, run, attempt, runJobs)
		if done || err != nil {
			return runner.RerunDone, err
		}
	}
	err := e.github.RerunJob(ctx, ref)
	switch {
	case err == nil:
		return runner.RerunDone, nil
	case errors.Is(err, github.ErrRerunRefused):
		return runner.RerunRefused, nil
	case errors.Is(err, github.ErrJobNotFound), errors.Is(err, github.ErrMisconfigured):
		e.log.Error("GitHub will not re-run the interrupted job; re-run it by hand", "job_id", job.ID, "pool", job.Pool, "error", err)
		return runner.RerunFailed, nil
	}
	return "", err
}

func (e *Engine) logRerun(log *slog.Logger, outcome string, calls int) {
	switch outcome {
	case runner.RerunDone:
		log.Info("interrupted job re-run", "rerun_calls", calls)
	case runner.RerunRefused:
		log.Info("GitHub refused the re-run: the run has an attempt going already (an earlier call of ours, or a person's re-run)", "rerun_calls", calls)
	default:
		log.Warn("interrupted job not re-run", "rerun_outcome", outcome, "rerun_calls", calls)
	}
}

// rerunOwedBy re-sends the re-run of the job an interrupted instance ran,
// while it is owed: the instance's delete is retried until it is done
// (the reconciler re-sends lost deletes), so a re-run message lost with a
// failed webhook response is sent again here.
func (e *Engine) rerunOwedBy(ctx context.Context, log *slog.Logger, inst *runner.Instance) error {
	if inst.Interruption != runner.InterruptionSpot {
		return nil
	}
	key := runner.JobKey(inst.JobID, inst.RunAttempt)
	if inst.ActiveJobID != 0 {
		key = runner.JobKey(inst.ActiveJobID, inst.ActiveRunAttempt)
	}
	job, err := e.store.GetJob(ctx, key)
	if errors.Is(err, store.ErrJobNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s: %w", key, err)
	}
	if job.Status != runner.JobRerun || job.Interrupted != inst.Name {
		return nil
	}
	log.Debug("the interrupted instance's job is still owed a re-run; sending it again", "job_key", key)
	return e.send(ctx, rerunMessage(job, EventMeta{}), 0)
}

// rerunMadeAlready reports whether the job's workflow run has an attempt
// after the job's (attempt): a re-run of it was made (by an earlier call
// of ours whose answer was lost, or by a person), and none may be asked
// again. jobs, when the caller read them already, are the run's.
func (e *Engine) rerunMadeAlready(ctx context.Context, run github.RunRef, attempt int64, jobs []github.Job) (bool, error) {
	if jobs == nil {
		var err error
		jobs, err = e.github.RunJobs(ctx, run)
		if errors.Is(err, github.ErrJobNotFound) {
			// GitHub cannot say: the re-run call itself decides (a run
			// gone is a job gone, RerunFailed).
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return github.LatestAttempt(jobs) > attempt, nil
}

// scaleSetJob finds the REST workflow job a scale-set job is: its
// messages name it by runner request, never by the id the re-run call
// needs, but they name its run, and the job is the one of the run the
// interrupted runner ran. An outcome is final: the run or that job is not
// there (RerunFailed, logged as every unrecoverable re-run is).
func (e *Engine) scaleSetJob(ctx context.Context, run github.RunRef, job *runner.Job) (github.Job, []github.Job, string, error) {
	if run.ID == 0 || job.Interrupted == "" {
		e.log.Error("GitHub will not re-run the interrupted job: its scale-set messages named no run or no runner; re-run it by hand",
			"job_id", job.ID, "pool", job.Pool, "run_id", run.ID, "instance", job.Interrupted)
		return github.Job{}, nil, runner.RerunFailed, nil
	}
	jobs, err := e.github.RunJobs(ctx, run)
	if errors.Is(err, github.ErrJobNotFound) || errors.Is(err, github.ErrMisconfigured) {
		e.log.Error("GitHub will not re-run the interrupted job; re-run it by hand", "job_id", job.ID, "pool", job.Pool, "run_id", run.ID, "error", err)
		return github.Job{}, nil, runner.RerunFailed, nil
	}
	if err != nil {
		return github.Job{}, nil, "", err
	}
	rest, ok := github.JobRanBy(jobs, job.Interrupted)
	if !ok {
		e.log.Error("GitHub will not re-run the interrupted job: its run lists no job its runner ran; re-run it by hand",
			"job_id", job.ID, "pool", job.Pool, "run_id", run.ID, "instance", job.Interrupted)
		return github.Job{}, nil, runner.RerunFailed, nil
	}
	return rest, jobs, "", nil
}
