package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/runner"
)

// A claim (runner.Instance.Claim) reads "<message id>#<receive>@<holder>":
// the delivery that made it (delivery.go) and, after '@', the process
// that holds it. A holder with a liveness record (a serve replica,
// leader.Liveness) is alive while its lease leader.LivenessLease(holder)
// is held; a holder without one (a Lambda invocation) is bounded by the
// claim's ClaimUntil alone.

// holderKey carries the claiming process: its holder id and the context
// that ends when its life does.
type holderKey struct{}

type holding struct {
	holder string
	alive  context.Context
}

// WithHolder says that work done under ctx is holder's: the claims it
// makes name holder, and, when alive is not nil, its work — provider
// calls, clean-up and store writes included — stops when alive ends (the
// holder's liveness lapsed: the others take its claims over, so it must
// not go on). A Lambda invocation names itself with a nil alive: its
// deadline already bounds it.
func WithHolder(ctx context.Context, holder string, alive context.Context) context.Context {
	if holder == "" {
		return ctx
	}
	return context.WithValue(ctx, holderKey{}, holding{holder: holder, alive: alive})
}

func holdingOf(ctx context.Context) holding {
	h, _ := ctx.Value(holderKey{}).(holding)
	return h
}

// claimOf is the claim work under ctx makes: its delivery and its holder.
func claimOf(ctx context.Context) string {
	c := deliveryOf(ctx).claim()
	if h := holdingOf(ctx).holder; h != "" {
		if c == "" {
			c = "-#0"
		}
		c += "@" + h
	}
	return c
}

// splitHolder splits a claim into its delivery part and its holder.
func splitHolder(claim string) (string, string) {
	i := strings.LastIndexByte(claim, '@')
	if i < 0 {
		return claim, ""
	}
	return claim[:i], claim[i+1:]
}

// claimHolder is the holder a claim names ("" when none).
func claimHolder(claim string) string {
	_, h := splitHolder(claim)
	return h
}

// untilDead ends ctx's derived context when the holder's life ends, so a
// clean-up that runs on past ctx's own cancellation (cleanupContext) still
// stops there.
func untilDead(ctx, derived context.Context, cancel context.CancelFunc) {
	if alive := holdingOf(ctx).alive; alive != nil {
		stop := context.AfterFunc(alive, cancel)
		context.AfterFunc(derived, func() { stop() })
	}
}

// deadWork is why work held in creating or deleting has stopped for
// certain ("" when it may still run).
type deadWork string

const (
	workAlive deadWork = ""
	// holderLapsed: the claim's holder's liveness lease was released or
	// expired.
	holderLapsed deadWork = "liveness"
	// claimExpired: the claim's ClaimUntil has passed (a Lambda
	// invocation's timeout, a serve worker's visibility).
	claimExpired deadWork = "claim_expired"
	// ownTakeover: a takeover this very process made in an earlier scan
	// and left without an outcome (its final write failed: the database
	// restarting). Scans run one after the other, so that work has
	// returned; it is done again at once rather than at its ClaimUntil.
	ownTakeover deadWork = "own_takeover"
)

// takeoverClaim is the claim a scan of dead work by holder writes.
func takeoverClaim(holder string) string { return "-#0@" + holder }

// decideDeadWork decides whether inst's creating or deleting work has
// stopped for certain at now, given its claim's holder's liveness lease
// (nil or Version 0: the holder keeps none) and the holder scanning
// (self; its own earlier takeovers have returned). A lease that was written and
// is now free — released on a clean stop, or expired — means the holder's
// work stopped: it stops acting a margin before its lease expires
// (leader.Liveness). A claim past its ClaimUntil has stopped whoever held
// it. Anything else may still be running; the reconciler's timeouts are
// the last resort for a holder alive but stuck.
func decideDeadWork(inst *runner.Instance, lease *runner.Lease, self string, now time.Time) deadWork {
	if inst == nil || inst.Claim == "" || inst.Status != runner.StatusCreating && inst.Status != runner.StatusDeleting {
		return workAlive
	}
	if self != "" && inst.Claim == takeoverClaim(self) {
		return ownTakeover
	}
	holder := claimHolder(inst.Claim)
	if holder != "" && lease != nil && lease.Version > 0 && !lease.HeldBy(holder, now) {
		return holderLapsed
	}
	if !inst.ClaimUntil.IsZero() && !now.Before(inst.ClaimUntil) {
		return claimExpired
	}
	return workAlive
}

// takeClaim writes the claim of the work under ctx over inst's, on the
// condition that inst still holds the same status, create attempt and
// claim: of several processes finding the same dead claim, exactly one
// takes it. It returns the instance taken, or nil when another took it
// (or it moved on) first. The observer hears the takeover, with reason.
func (e *Engine) takeClaim(ctx context.Context, inst *runner.Instance, reason string) (*runner.Instance, error) {
	now := e.now()
	until := claimUntil(ctx, now)
	if until.IsZero() {
		// A scan has no deadline of its own: its recovery is bounded by
		// the clean-up budget (cleanupContext).
		until = now.Add(e.cleanupBudget() + cleanupGrace)
	}
	taken, won, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status != inst.Status || cur.CreateAttempt != inst.CreateAttempt || cur.Claim != inst.Claim {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.Claim, next.ClaimUntil = claimOf(ctx), until
		return next, nil
	})
	if err != nil {
		return nil, fmt.Errorf("take over the claim on %s: %w", inst.Name, err)
	}
	if !won {
		return nil, nil
	}
	e.observer.WorkTakenOver(inst, reason, now.Sub(inst.StatusChangedAt))
	return taken, nil
}

// DeadWorkScanInterval is how often each serve replica (and each of the
// simulation's) runs TakeOverDeadWork.
const DeadWorkScanInterval = 3 * time.Second

// TakeOverDeadWork finds the instances held in creating or deleting by
// work that has stopped for certain (decideDeadWork: its holder's
// liveness lapsed, or its claim's ClaimUntil passed) and takes each over
// at once — a create recovered as a failed one (its runner and machine
// looked up by name and removed, the create retried), a delete returned to
// pending and sent again. Each takeover is a conditional write on the
// claim (takeClaim), so several processes may scan at once. Run it under
// WithHolder: the claims it takes name this process. It returns how many
// it took over.
func (e *Engine) TakeOverDeadWork(ctx context.Context) (int, error) {
	live, err := e.store.ListLiveInstances(ctx)
	if err != nil {
		return 0, fmt.Errorf("list live instances: %w", err)
	}
	leases := map[string]*runner.Lease{}
	var errs []error
	taken := 0
	for _, inst := range live {
		if inst.Claim == "" || inst.Status != runner.StatusCreating && inst.Status != runner.StatusDeleting {
			continue
		}
		lease, err := e.livenessOf(ctx, leases, claimHolder(inst.Claim))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		why := decideDeadWork(inst, lease, holdingOf(ctx).holder, e.now())
		if why == workAlive {
			continue
		}
		log := e.log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID, "claim", inst.Claim, "takeover", string(why))
		ok, err := e.takeOverDead(ctx, log, inst, why)
		if ok {
			taken++
		}
		errs = append(errs, err)
	}
	return taken, errors.Join(errs...)
}

// livenessOf reads holder's liveness lease once per scan (nil for no
// holder).
func (e *Engine) livenessOf(ctx context.Context, seen map[string]*runner.Lease, holder string) (*runner.Lease, error) {
	if holder == "" {
		return nil, nil
	}
	if l, ok := seen[holder]; ok {
		return l, nil
	}
	l, err := e.store.GetLease(ctx, leader.LivenessLease(holder))
	if err != nil {
		return nil, fmt.Errorf("read the liveness of %s: %w", holder, err)
	}
	seen[holder] = l
	return l, nil
}

// takeOverDead takes one dead claim and recovers its work.
func (e *Engine) takeOverDead(ctx context.Context, log *slog.Logger, inst *runner.Instance, why deadWork) (bool, error) {
	taken, err := e.takeClaim(ctx, inst, string(why))
	if err != nil || taken == nil {
		return false, err
	}
	log.Warn("the work holding this instance stopped; taking it over", "status", inst.Status, "claimed_at", inst.StatusChangedAt)
	if taken.Status == runner.StatusCreating {
		return true, e.recoverCreating(ctx, log, taken, "takeover")
	}
	return true, e.recoverDeleting(ctx, log, taken)
}
