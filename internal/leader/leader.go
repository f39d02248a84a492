// Package leader runs work that must run in one process at a time among
// processes sharing a store — the reconciler of several `runfleet serve`
// replicas today, one listener per runner scale set next — while that
// process holds a named lease (store.Leases, runner.Lease).
//
// A process that cannot renew the lease stops the work before the lease
// expires by its own clock; a process that dies stops renewing, and
// another takes the lease once it has expired. The work itself must still
// be safe if two copies overlap for a moment (clocks that disagree by more
// than the margin, a pause longer than the TTL): every write runfleet makes
// is conditional, so the lease makes the work run once, it does not make
// it correct.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Options say which lease to hold, as whom, and for how long.
type Options struct {
	// Leases keeps the lease (the store the processes share). Required.
	Leases store.Leases
	// Name is the lease's name, the same in every process ("reconciler",
	// "listener/<scale set>"). Required.
	Name string
	// Holder names this process, unique among the processes (and among
	// this process's past lives: a restarted process must not pass for
	// its predecessor). Required; see HolderID.
	Holder string
	// TTL is how long an acquire or renew holds the lease: how long the
	// others wait after this process dies. Renewed every TTL/3. Required.
	TTL time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Runtime is the clock, timers and goroutines the leader uses;
	// RealRuntime when nil.
	Runtime Runtime
}

// Run holds the lease whenever it can and runs work while it does, until
// ctx is done. work gets a context that ends when the lease is lost, when
// it could not be renewed in time, or when ctx ends; Run waits for work to
// return before it tries to take the lease again, so one process never runs
// two copies. When work returns on its own the lease is released and taken
// again after a renewal period. On the way out a held lease is released, so
// another process need not wait for it to expire.
func Run(ctx context.Context, o Options, work func(ctx context.Context)) error {
	if err := o.check(); err != nil {
		return err
	}
	for ctx.Err() == nil {
		held := acquire(ctx, o)
		if held == nil {
			return nil
		}
		o.Logger.Info("lease acquired: this process now runs "+o.Name, "lease", o.Name, "holder", o.Holder, "expires_at", held.ExpiresAt)
		hold(ctx, o, held, work)
		if !o.Runtime.Sleep(ctx, o.renewEvery()) {
			return nil
		}
	}
	return nil
}

func (o *Options) check() error {
	if o.Leases == nil || o.Name == "" || o.Holder == "" || o.TTL <= 0 {
		return fmt.Errorf("leader: lease %q needs a store, a name, a holder and a positive TTL", o.Name)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Runtime == nil {
		o.Runtime = RealRuntime{}
	}
	return nil
}

// renewEvery is how often a holder renews and a standby tries to acquire:
// two renewals may fail before the lease is at risk.
func (o *Options) renewEvery() time.Duration { return o.TTL / 3 }

// margin is how long before the lease's expiry by its own clock a holder
// that could not renew stops acting: the others take the lease by their
// clocks, which may run ahead of this one's by up to that much.
func (o *Options) margin() time.Duration { return o.TTL / 6 }

// acquire tries to take the lease until it has it (returned) or ctx is
// done (nil). While another holds it, it tries again when that holding
// expires or after a renewal period, whichever is first: a standby takes
// over from a dead holder at its lease's expiry, by its own clock.
func acquire(ctx context.Context, o Options) *runner.Lease {
	lastHolder := ""
	for {
		held, err := o.Leases.AcquireLease(ctx, o.Name, o.Holder, o.TTL, o.Runtime.Now())
		if err == nil {
			return held
		}
		wait := o.renewEvery()
		var other *runner.LeaseHeldError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &other):
			if other.Holder != lastHolder {
				o.Logger.Info("lease held by another process; standing by", "lease", o.Name, "holder", o.Holder,
					"held_by", other.Holder, "expires_at", other.ExpiresAt)
				lastHolder = other.Holder
			}
			// At the expiry itself, not past it: the store decides on this
			// process's clock (the now passed), so the acquire then
			// succeeds, and the bound the docs state — the TTL after the
			// holder's last renewal, so at most the TTL after its death —
			// is met (issue #32). Clocks that disagree are the holder's
			// margin's business: it stopped acting a margin before.
			wait = min(wait, other.ExpiresAt.Sub(o.Runtime.Now()))
		default:
			o.Logger.Warn("acquiring the lease failed; trying again", "lease", o.Name, "holder", o.Holder, "error", err, "retry_in", wait)
		}
		if !o.Runtime.Sleep(ctx, max(wait, time.Millisecond)) {
			return nil
		}
	}
}

// hold runs work while held lasts, renewing it every renewal period, and
// returns once work has returned.
//
// It waits with Runtime.Sleep on a context that ends when work returns or
// ctx ends, and checks on every waking what woke it: a runtime whose
// sleeps do not end early (the simulation's) still renews on time and
// notices a returned work by the next renewal.
func hold(ctx context.Context, o Options, held *runner.Lease, work func(context.Context)) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	watch, woke := context.WithCancel(ctx)
	defer woke()
	// exited ends only when work has returned; WithoutCancel keeps ctx's
	// values (the simulation finds its task there).
	exited, exit := context.WithCancel(context.WithoutCancel(ctx))
	defer exit()
	var returned atomic.Bool
	o.Runtime.Go(wctx, func(c context.Context) {
		defer func() { returned.Store(true); exit(); woke() }()
		work(c)
	})
	// awaitWork waits for work to return after stop; a false Sleep means
	// the wait itself ended (work returned, or the runtime is going away).
	awaitWork := func() {
		for !returned.Load() && o.Runtime.Sleep(exited, o.renewEvery()) {
		}
	}
	renewAt := o.Runtime.Now().Add(o.renewEvery())
	for {
		// Wake a margin before the lease expires by this process's clock,
		// or at the next renewal, whichever is first.
		deadline := held.ExpiresAt.Add(-o.margin())
		wake := renewAt
		if deadline.Before(wake) {
			wake = deadline
		}
		o.Runtime.Sleep(watch, wake.Sub(o.Runtime.Now()))
		now := o.Runtime.Now()
		switch {
		case returned.Load():
			why := "the work returned"
			if ctx.Err() != nil {
				why = "shutting down"
			}
			release(ctx, o, held, why)
			return
		case ctx.Err() != nil:
			stop()
			awaitWork()
			release(ctx, o, held, "shutting down")
			return
		case !now.Before(deadline):
			o.Logger.Warn("lease not renewed in time: this process stops running "+o.Name, "lease", o.Name, "holder", o.Holder, "expires_at", held.ExpiresAt)
			stop()
			awaitWork()
			return
		case !now.Before(renewAt):
			renewAt = now.Add(o.renewEvery())
			next, err := o.Leases.RenewLease(ctx, held, o.TTL, now)
			switch {
			case err == nil:
				held = next
			case errors.Is(err, runner.ErrLeaseLost):
				o.Logger.Warn("lease lost: this process stops running "+o.Name, "lease", o.Name, "holder", o.Holder, "error", err)
				stop()
				awaitWork()
				return
			case ctx.Err() == nil:
				o.Logger.Warn("renewing the lease failed; trying again before it expires", "lease", o.Name, "holder", o.Holder,
					"error", err, "expires_at", held.ExpiresAt)
			}
		}
	}
}

// releaseTimeout bounds the release on the way out: a database that does
// not answer must not hold up a shutdown (the lease then expires).
const releaseTimeout = 5 * time.Second

// release frees the lease so the next holder need not wait for its expiry.
// It runs on ctx's values without its cancellation: ctx is usually done.
func release(ctx context.Context, o Options, held *runner.Lease, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := o.Leases.ReleaseLease(ctx, held); err != nil {
		o.Logger.Warn("releasing the lease failed; it expires by itself", "lease", o.Name, "holder", o.Holder, "error", err, "expires_at", held.ExpiresAt)
		return
	}
	o.Logger.Info("lease released: "+why, "lease", o.Name, "holder", o.Holder)
}
