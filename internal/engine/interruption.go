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

// InterruptionNotice is a provider's word that it takes a machine back:
// EC2's spot interruption warning or rebalance recommendation (delivered
// by EventBridge), or an interrupted machine a reconcile pass found by
// polling (providers.InterruptionLister).
type InterruptionNotice struct {
	// ProviderID is the machine's id at its provider (the EC2 instance id).
	ProviderID string
	// Pool, when known, narrows the search to that pool's instances.
	Pool string
	// Instance, when known, is the machine's name (its runfleet:instance
	// tag): it finds an instance whose create is still in flight, which has
	// no provider id recorded yet. EventBridge's event has none; a poll
	// does.
	Instance string
	// At is when the provider gave the warning; zero means now.
	At time.Time
	// Since is the earliest a job on the machine can have failed because
	// of the interruption: when the provider warned (EventBridge's event
	// time), or, polled, SpotWarningLead before the termination the
	// provider reports. Zero when not known, which makes every failure on
	// the machine count as the interruption's (interruptedRun). It is
	// never the time of receipt or of a poll: those come after the
	// termination, and a job the termination failed may have completed
	// before them.
	Since time.Time
	Kind  runner.Interruption
	// Source names where the notice came from, for the log (eventbridge,
	// reconciler).
	Source string
}

// SpotWarningLead is how long before it takes a spot machine back EC2
// warns (AWS documents two minutes): a poll that learns only the
// termination places the warning this long before it.
const SpotWarningLead = 2 * time.Minute

// Interruption results.
const (
	// InterruptionNotOurs: no live instance of this installation runs on
	// the machine (another stack's, or one already deleted).
	InterruptionNotOurs = "not_ours"
	// InterruptionMarked: the instance is marked; a job failing on it is
	// re-run once.
	InterruptionMarked = "marked"
	// InterruptionReplaced: the instance ran no job; it is deleted at once
	// so its job (if still queued) gets another machine.
	InterruptionReplaced = "replaced"
	// InterruptionKnown: the instance was marked already (a redelivered
	// warning).
	InterruptionKnown = "already_marked"
)

// InvalidNoticeError is a notice that can never be acted on.
type InvalidNoticeError struct{ Reason string }

func (e *InvalidNoticeError) Error() string { return "invalid interruption notice: " + e.Reason }

// Is makes errors.Is(err, ErrMalformed) true: like a malformed message, it
// must be dropped, not retried.
func (e *InvalidNoticeError) Is(target error) bool { return target == ErrMalformed }

// HandleInterruption marks the instance on the interrupted machine. For a
// spot interruption it also counts the interruption in the pool's spot
// breaker (once per instance), and an instance whose runner holds no job
// is deleted at once so its job gets another machine (on-demand if the
// breaker is open). A runner running a job is left alone: the job fails
// when the machine goes, its completed event finds the mark, and the job
// is re-run once (rerun.go). A rebalance recommendation is only recorded
// and logged: the machine may well finish its job.
//
// Every write is a compare-and-set, and the breaker counts an instance
// once, so the same notice delivered again, or by both EventBridge and a
// reconcile pass, changes nothing more.
func (e *Engine) HandleInterruption(ctx context.Context, n InterruptionNotice) (string, error) {
	switch {
	case n.ProviderID == "":
		return "", &InvalidNoticeError{Reason: "no provider id"}
	case !n.Kind.Valid():
		return "", &InvalidNoticeError{Reason: fmt.Sprintf("unknown kind %q", n.Kind)}
	}
	if n.At.IsZero() {
		n.At = e.now()
	}
	log := e.log.With("provider_id", n.ProviderID, "interruption", string(n.Kind), "source", n.Source)
	inst, err := e.instanceOnMachine(ctx, n.Pool, n.ProviderID, n.Instance)
	if err != nil {
		return "", err
	}
	if inst == nil {
		return e.interruptionOfDeleted(ctx, log, n)
	}
	log = log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID)
	if n.Kind == runner.InterruptionSpot {
		// Counted before the mark: a crash between the two leaves an
		// unmarked instance whose redelivered warning is not counted twice.
		if err := e.countInterruption(ctx, log, inst, n.At); err != nil {
			return "", err
		}
	}
	marked, changed, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if !cur.Status.Live() || cur.Interruption == runner.InterruptionSpot || cur.Interruption == n.Kind {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.Interruption, next.InterruptedAt, next.UpdatedAt = n.Kind, n.At, e.now()
		next.InterruptedSince = n.Since
		return next, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return InterruptionNotOurs, nil
	}
	if err != nil {
		return "", fmt.Errorf("mark %s interrupted: %w", inst.Name, err)
	}
	result := InterruptionKnown
	if changed {
		result = InterruptionMarked
		log.Warn("the provider is taking the machine back", "runner_status", marked.RunnerStatus, "status", marked.Status)
	}
	if n.Kind == runner.InterruptionSpot {
		if _, err := e.interruptJob(ctx, log, marked, n.Since); err != nil {
			return "", err
		}
	}
	if n.Kind != runner.InterruptionSpot || marked.RunnerStatus == runner.RunnerActive || marked.RunnerStatus == runner.RunnerTerminated {
		return result, nil
	}
	// No job on it: nothing to re-run, and waiting for the machine to die
	// would only delay the job it was made for.
	if err := e.scheduleDelete(ctx, log, marked.Name, EventMeta{}, "spot interruption: the provider is taking the machine back"); err != nil {
		return "", err
	}
	return InterruptionReplaced, nil
}

// instanceOnMachine finds the live instance whose machine has providerID,
// or, when the machine's name is known, the instance of that name whose
// create has not recorded a provider id yet: a create that hangs past
// the machine's boot leaves its runner running a job meanwhile, and the
// machine can be taken back before the create returns.
func (e *Engine) instanceOnMachine(ctx context.Context, pool, providerID, name string) (*runner.Instance, error) {
	var live []*runner.Instance
	var err error
	if pool != "" {
		live, err = e.store.ListInstancesByPool(ctx, pool)
	} else {
		live, err = e.store.ListLiveInstances(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list live instances: %w", err)
	}
	for _, inst := range live {
		if inst.ProviderID == providerID {
			return inst, nil
		}
	}
	for _, inst := range live {
		if name != "" && inst.Name == name && inst.ProviderID == "" {
			return inst, nil
		}
	}
	return nil, nil
}

// interruptionOfDeleted handles a notice about a machine no live instance
// runs on: the instance named by a poll may have been deleted already (an
// operator's forced delete), while the job its runner ran still waits for
// GitHub to give up on the runner; that job is owed the re-run.
func (e *Engine) interruptionOfDeleted(ctx context.Context, log *slog.Logger, n InterruptionNotice) (string, error) {
	var inst *runner.Instance
	if n.Kind == runner.InterruptionSpot {
		var err error
		if inst, err = e.deletedOnMachine(ctx, n.Instance, n.ProviderID); err != nil {
			return "", err
		}
	}
	if inst == nil {
		log.Info("interruption of a machine no live instance of this installation runs on; ignored")
		return InterruptionNotOurs, nil
	}
	log = log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.ActiveJobID)
	if inst.ActiveJobID == 0 {
		bound, err := e.boundByGitHub(ctx, inst)
		if err != nil {
			return "", err
		}
		if bound == nil {
			log.Debug("interruption of a deleted instance's machine whose runner's job is not known; nothing more is owed")
			return InterruptionNotOurs, nil
		}
		inst, log = bound, log.With("job_id", bound.ActiveJobID)
	}
	changed, err := e.interruptJob(ctx, log, inst, n.Since)
	if err != nil {
		return "", err
	}
	if !changed {
		log.Debug("interruption of a deleted instance's machine; nothing more is owed")
		return InterruptionNotOurs, nil
	}
	return InterruptionMarked, nil
}
