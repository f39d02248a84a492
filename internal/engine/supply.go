package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Supply follows demand: an open job has at most one live instance made for
// it, and when that instance ends for any reason while the job is still
// open, another is made — with backoff, for as long as the job is queued.

// scaleUpRetryMax caps how long a job waiting for pool capacity sleeps
// between tries, so a slot freed by a delete is taken within seconds rather
// than after the 5-minute delete backoff cap.
const scaleUpRetryMax = 15 * time.Second

// supplyCall says who asks supply to serve a job, which decides what it
// does while the job's backoff runs.
type supplyCall struct {
	// event is the job event that asked, for log lines and the messages
	// sent; zero when the engine asks on its own.
	event EventMeta
	// verify asks GitHub before a replacement; nil on intake.
	verify verifyFunc
	// attempt counts earlier tries while the pool was full.
	attempt int
	// retry is set for a serve_job message: the NextAttemptAt it was sent
	// for. A retry finding the job rescheduled since ends (another retry
	// is on its way); one finding it due serves it.
	retry     bool
	notBefore time.Time
	// schedule asks for a serve_job message at the end of a running
	// backoff (the engine just ended the job's instance); intake and the
	// reconciler leave it to the retry already on its way, or to the
	// reconciler's next pass.
	schedule bool
}

// verifyFunc asks GitHub whether a job whose instance ended is still
// queued. Job events have none: the ledger never calls GitHub.
type verifyFunc func(ctx context.Context, job *runner.Job) (jobAnswer, error)

// jobAnswer is what GitHub said about a job.
type jobAnswer struct {
	// Status is the status the job has moved to ("" when it still wants a
	// runner).
	Status runner.JobStatus
	// RunnerName is the runner GitHub gave the job to, when it says: the
	// binding an in_progress delivery that was lost would have recorded.
	RunnerName string
}

// recordRunner writes the runner GitHub named on next, the job's next
// version, unless a delivery recorded one already.
func (a jobAnswer) recordRunner(next *runner.Job) {
	if next.RunnerName == "" && a.RunnerName != "" && a.Status != "" {
		next.RunnerName = a.RunnerName
	}
}

// covers reports whether inst still serves job (runner.Covers, the one
// definition the counts use too): live, not on its way out, and not taken
// by another job (GitHub gives a job to any idle runner whose labels cover
// it, not to the one made for it).
func covers(inst *runner.Instance, job *runner.Job) bool { return runner.Covers(inst, job) }

// coveringInstance returns the job's instance if it still serves the job.
func (lg *Ledger) coveringInstance(ctx context.Context, job *runner.Job) (*runner.Instance, error) {
	if job.Instance == "" {
		return nil, nil
	}
	inst, err := lg.store.GetInstance(ctx, job.Instance)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read instance %s: %w", job.Instance, err)
	}
	if !covers(inst, job) {
		return nil, nil
	}
	return inst, nil
}

// supplyStep is what supply does next for a job, decided from the records
// alone (decideSupply).
type supplyStep int

const (
	// supplySettled: the job no longer wants a runner; nothing is made.
	supplySettled supplyStep = iota
	// supplyNoPool: the job's pool is no longer configured.
	supplyNoPool
	// supplyReadCover: the job's instance must be read before deciding:
	// it may still cover the job.
	supplyReadCover
	// supplyCovered: a live instance serves the job (a duplicate event).
	supplyCovered
	// supplyBackingOff: the job's backoff runs; the retry already on its
	// way, or the reconciler, serves it after.
	supplyBackingOff
	// supplyScheduleRetry: the job's backoff runs; send the serve_job
	// retry for its end.
	supplyScheduleRetry
	// supplyOvertaken: this serve_job retry was rescheduled by a later
	// one, which is on its way; this one ends.
	supplyOvertaken
	// supplyRefused: the job's pool now refuses its shape.
	supplyRefused
	// supplyVerify: ask GitHub first whether the job is still queued (its
	// last instance ended and nobody asked since).
	supplyVerify
	// supplyAdmit: make the job's next instance.
	supplyAdmit
)

// supplyFacts are the records supply decides on.
type supplyFacts struct {
	job *runner.Job
	// pool is the job's pool; nil when it is no longer configured.
	pool *runner.Pool
	// coverRead says cover was read: the job's instance if it still
	// covers the job, else nil.
	coverRead bool
	cover     *runner.Instance
	now       time.Time
}

// decideSupply is what supply does next for the job in f, asked by call.
func decideSupply(f supplyFacts, call supplyCall) supplyStep {
	job := f.job
	switch {
	case !job.Status.WantsRunner():
		return supplySettled
	case f.pool == nil:
		return supplyNoPool
	case !f.coverRead:
		return supplyReadCover
	case f.cover != nil:
		return supplyCovered
	case job.NextAttemptAt.After(f.now):
		switch {
		case call.retry && !call.notBefore.Equal(job.NextAttemptAt):
			return supplyOvertaken
		case call.retry || call.schedule:
			return supplyScheduleRetry
		}
		return supplyBackingOff
	case refusal(f.pool, job.Labels) != nil:
		return supplyRefused
	case call.verify != nil && job.Made > 0 && job.CheckedMade != job.Made:
		return supplyVerify
	}
	return supplyAdmit
}

// supply makes job's next instance if the job wants a runner and nothing
// covers it (decideSupply). A job with Version 0 is not stored yet: it is
// created in the same atomic write as its first instance. A write that
// loses a race reads the job again and decides again: the copy that lost
// names a version the store no longer holds, so deciding from it again
// would only lose again (two retry messages of one job race this way).
func (lg *Ledger) supply(ctx context.Context, log *slog.Logger, job *runner.Job, call supplyCall) (Outcome, error) {
	key := job.Key()
	out := Outcome{Action: string(runner.ActionQueued), Pool: job.Pool}
	for range maxConflictRetries {
		if job == nil {
			var err error
			if job, err = lg.store.GetJob(ctx, key); err != nil {
				if errors.Is(err, store.ErrJobNotFound) {
					out.Result = ResultIgnored
					return out, nil
				}
				return out, fmt.Errorf("read job %s: %w", key, err)
			}
		}
		f := supplyFacts{job: job}
		if p, ok := lg.pool(job.Pool); ok {
			f.pool = p
		}
		step := decideSupply(f, call)
		if step == supplyReadCover {
			cover, err := lg.coveringInstance(ctx, job)
			if err != nil {
				return out, err
			}
			f.cover, f.coverRead, f.now = cover, true, lg.now()
			step = decideSupply(f, call)
		}
		var again bool
		var err error
		var written *runner.Job // the job as this pass wrote it, if it did
		switch step {
		case supplySettled:
			out.Result = ResultJobSettled
			log.Info("job no longer wants a runner; nothing made", "job_status", job.Status)
		case supplyNoPool:
			log.Warn("the job's pool is no longer configured; nothing made", "pool", job.Pool)
			out.Result = ResultNoMatchingPool
		case supplyCovered:
			out.Instance, out.Result = f.cover.Name, ResultDuplicate
			err = lg.resendPendingCreate(ctx, f.cover, call.event)
		case supplyBackingOff, supplyScheduleRetry, supplyOvertaken:
			out.Result = ResultBackingOff
			err = lg.backOff(ctx, log, job, step, call, f.now)
		case supplyRefused:
			// Recorded before its pool's policy was narrowed.
			r := refusal(f.pool, job.Labels)
			lg.refuse(log, f.pool.Name, r)
			out.Result, out.Reason = ResultRefused, r.Reason
			err = lg.parkRefused(ctx, job)
		case supplyVerify:
			written, again, err = lg.verifyJob(ctx, log, job, call.verify, f.now)
		case supplyAdmit:
			again, err = lg.admitNext(ctx, log, job, f.pool, &call, f.now, &out)
		}
		if err != nil || !again {
			return out, err
		}
		// Decide again from the job this pass wrote, or, when a write lost
		// a race, from a fresh read (job nil).
		job = written
	}
	return out, fmt.Errorf("job %s: gave up after %d conflicting writes", key, maxConflictRetries)
}

// backOff is supply while the job's backoff runs: a serve_job retry is
// sent for its end when step asks for it.
func (lg *Ledger) backOff(ctx context.Context, log *slog.Logger, job *runner.Job, step supplyStep, call supplyCall, now time.Time) error {
	if step == supplyOvertaken {
		log.Debug("serve_job retry overtaken by a later one; it ends here")
		return nil
	}
	delay := job.NextAttemptAt.Sub(now)
	if step == supplyScheduleRetry {
		if err := lg.send(ctx, serveJobMessage(job, call.event, call.attempt), delay); err != nil {
			return fmt.Errorf("enqueue serve_job for %s: %w", job.Key(), err)
		}
	}
	log.Info("the job's next instance is made after its backoff", "retry_in", delay.String(), "made", job.Made)
	return nil
}

// verifyJob records GitHub's answer to whether the job is still queued
// (verify), and returns the job as now stored for supply to decide again;
// nil when the write lost a race (supply reads it again).
func (lg *Ledger) verifyJob(ctx context.Context, log *slog.Logger, job *runner.Job, verify verifyFunc, now time.Time) (*runner.Job, bool, error) {
	answer, err := verify(ctx, job)
	if err != nil {
		return job, false, err
	}
	settled := answer.Status
	next := job.Clone()
	if settled != "" && settled != job.Status {
		if next, err = job.Transition(settled, now); err != nil {
			return job, false, err
		}
	}
	answer.recordRunner(next)
	next.CheckedMade = job.Made
	next.Version = job.Version
	if err := lg.store.UpdateJob(ctx, job.Status, next); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, true, nil
		}
		return job, false, fmt.Errorf("record GitHub's answer for job %s: %w", job.Key(), err)
	}
	if settled != "" {
		log.Info("GitHub says the job no longer waits for a runner; no replacement", "github_status", settled)
	}
	return next, true, nil
}

// admitNext writes the job's next instance with the job in one admission
// (and enqueues its create). A full pool keeps the job for a serve_job
// retry (call.attempt counts them); a lost race, or an instance by that
// name that the ledger did not know, returns again: supply reads the job
// and decides again.
func (lg *Ledger) admitNext(ctx context.Context, log *slog.Logger, job *runner.Job, pool *runner.Pool, call *supplyCall, now time.Time, out *Outcome) (again bool, err error) {
	next := job.Clone()
	next.Made++
	next.Instance = job.InstanceFor(next.Made)
	next.NextAttemptAt = now.Add(lg.backoff(next.Made))
	next.UpdatedAt = now
	inst := lg.newInstance(pool, job, next.Instance)
	out.Instance = inst.Name
	ilog := log.With("instance", inst.Name)
	err = lg.admit(ctx, store.Admission{Instance: inst, MaxRunners: pool.MaxRunners, Job: next, JobFrom: storedStatus(job)}, call.event)
	switch {
	case err == nil:
		ilog.Info("instance admitted for job", "status", inst.Status, "made", next.Made)
		out.Result = ResultCreated
		return false, nil
	case errors.Is(err, store.ErrPoolFull):
		return lg.awaitCapacity(ctx, ilog, job, pool, call, now, out)
	case errors.Is(err, store.ErrJobExists), errors.Is(err, store.ErrConflict):
		return true, nil
	case errors.Is(err, store.ErrAlreadyExists):
		// An instance by that name exists without the ledger knowing
		// (made by a build before the job ledger): link it.
		link := next.Clone()
		link.NextAttemptAt = job.NextAttemptAt
		if err := lg.writeJob(ctx, job, link); err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrJobExists) {
			return false, fmt.Errorf("link job %s to instance %s: %w", job.Key(), link.Instance, err)
		}
		return true, nil
	default:
		return false, fmt.Errorf("admit instance %s: %w", inst.Name, err)
	}
}

// awaitCapacity keeps a job its full pool could not serve: the job records
// when it is tried next — demand is never only a message, and the one
// retry sent for that time is the only one: the reconciler and later
// events leave the job alone until then.
func (lg *Ledger) awaitCapacity(ctx context.Context, log *slog.Logger, job *runner.Job, pool *runner.Pool, call *supplyCall, now time.Time, out *Outcome) (again bool, err error) {
	call.attempt++
	delay := min(lg.backoff(call.attempt), scaleUpRetryMax)
	wait := job.Clone()
	wait.NextAttemptAt = now.Add(delay)
	wait.UpdatedAt = now
	err = lg.writeJob(ctx, job, wait)
	if errors.Is(err, store.ErrJobExists) || errors.Is(err, store.ErrConflict) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("record job %s waiting for capacity: %w", job.Key(), err)
	}
	if err := lg.send(ctx, serveJobMessage(wait, call.event, call.attempt), delay); err != nil {
		return false, fmt.Errorf("enqueue serve_job for %s: %w", job.Key(), err)
	}
	log.Info("pool at max_runners; job kept for retry", "max_runners", pool.MaxRunners, "retry_in", delay.String(), "attempt", call.attempt)
	out.Instance, out.Result = "", ResultAwaitingCapacity
	return false, nil
}

// writeJob writes next over job as read: a create for a job not stored
// yet (Version 0), else a compare-and-set on its status and version.
func (lg *Ledger) writeJob(ctx context.Context, job, next *runner.Job) error {
	if job.Version == 0 {
		return lg.store.CreateJob(ctx, next)
	}
	next.Version = job.Version
	return lg.store.UpdateJob(ctx, job.Status, next)
}

// storedStatus is the status an admission compares the stored job with;
// "" for a job not stored yet, which the admission creates.
func storedStatus(job *runner.Job) runner.JobStatus {
	if job.Version == 0 {
		return ""
	}
	return job.Status
}

// newInstance is the pending_create instance named name, made for job.
func (lg *Ledger) newInstance(pool *runner.Pool, job *runner.Job, name string) *runner.Instance {
	now := lg.now()
	inst := &runner.Instance{
		Name:            name,
		Pool:            pool.Name,
		Status:          runner.StatusPendingCreate,
		RunnerStatus:    runner.RunnerPending,
		Owner:           pool.Owner,
		Labels:          pool.RunnerLabels(lg.controllerID),
		CreatedAt:       now,
		UpdatedAt:       now,
		StatusChangedAt: now,
	}
	if job != nil {
		inst.JobID, inst.RunAttempt, inst.InstallationID = job.ID, job.RunAttempt, job.InstallationID
		inst.JobQueuedAt, inst.Repository = job.QueuedAt, job.Repository
		inst.Labels = pool.JobRunnerLabels(lg.controllerID, job.Labels)
	}
	return inst
}

// admit writes an admission and enqueues its create. A store that keeps the
// queue (store.Outbox) does both in one commit; otherwise the message
// follows the write, and if it is lost in between the reconciler re-sends
// it. The store's errors are returned unwrapped, for errors.Is.
func (lg *Ledger) admit(ctx context.Context, a store.Admission, meta EventMeta) error {
	msg := createMessage(a.Instance, meta)
	outbox, ok := lg.store.(store.Outbox)
	if !ok {
		if err := lg.store.CreateInstance(ctx, a); err != nil {
			return err
		}
		if err := lg.send(ctx, msg, 0); err != nil {
			return fmt.Errorf("enqueue create for %s: %w", a.Instance.Name, err)
		}
		return nil
	}
	body, err := EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode create for %s: %w", a.Instance.Name, err)
	}
	return outbox.CreateInstanceAndSend(ctx, a, body)
}

// resendPendingCreate re-sends the create of an instance still waiting for
// it: the write that admitted it may have been followed by a lost send (a
// store without an outbox). The worker's compare-and-set admits one create.
func (lg *Ledger) resendPendingCreate(ctx context.Context, inst *runner.Instance, meta EventMeta) error {
	if inst.Status != runner.StatusPendingCreate {
		return nil
	}
	if _, ok := lg.store.(store.Outbox); ok {
		return nil
	}
	if err := lg.send(ctx, createMessage(inst, meta), 0); err != nil {
		return fmt.Errorf("re-enqueue create for %s: %w", inst.Name, err)
	}
	return nil
}
