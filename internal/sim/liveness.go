package sim

import (
	"context"
	"fmt"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/leader"
)

// A replica's liveness (issue #32), as serve runs it on a shared store
// (internal/serve/liveness.go): each process holds a liveness lease
// through the real leader.Liveness on the virtual clock (simRuntime), its
// workers' claims name the life's holder (engine.WithHolder), and every
// replica scans for dead work every 3 s (engine.Engine.TakeOverDeadWork).
// Serve's scan loop is not reused: it waits on a real-time ticker, which
// never fires on the virtual clock, so the loop below runs at its
// interval (engine.DeadWorkScanInterval) on the scheduler instead.

// DeadWorkTaker is a Controller that takes over work whose holder's
// liveness lapsed (engine.Engine.TakeOverDeadWork). Optional: without it
// dead work waits for its message's redelivery or the reconciler's
// timeouts.
type DeadWorkTaker interface {
	TakeOverDeadWork(ctx context.Context) (int, error)
}

// lifeKey carries, in a task's context, the life its work is done under.
type lifeKey struct{}

// workLife is the life work is done under, and the cancel of the work's
// context.
type workLife struct {
	alive  context.Context
	cancel context.CancelFunc
}

// startLiveness starts the process's liveness and its scan of dead work
// (shared store only; serve runs neither without replicas).
func (p *process) startLiveness() {
	w := p.w
	if !w.sharedStore() {
		return
	}
	l, err := leader.NewLiveness(leader.Options{
		Leases: &listenerStore{real: p.state.Store, sp: p.store}, Holder: fmt.Sprintf("sim-gen-%d", p.gen),
		TTL: leader.LivenessTTL, Logger: w.log, Runtime: simRuntime{p: p},
	})
	if err != nil {
		w.violate("the liveness starts", "%v", err)
		return
	}
	p.lives = l
	// Its loops look at their context, not at the process's death: die
	// ends it (without a release, which a dead process cannot write).
	ctx, cancel := context.WithCancel(context.Background())
	p.stops = append(p.stops, cancel)
	p.spawnCtx(ctx, "liveness", l.Run)
	p.spawn("scan", p.scanDeadWork)
}

// life is the process's current life (ok false between lives, and
// without liveness).
func (p *process) life() (holder string, alive context.Context, ok bool) {
	if p.lives == nil {
		return "", nil, false
	}
	return p.lives.Current()
}

// underLife is ctx and its cancel for work done under the life holder,
// alive: its claims name holder, and its port calls fail once the life
// has ended, as serve's work stops then. The engine is given no alive:
// it would watch it with context.AfterFunc, a goroutine of its own that
// would end the work at a moment real time picks; the port (enter) ends
// it instead, at the work's next call, within the turn.
func underLife(ctx context.Context, cancel context.CancelFunc, holder string, alive context.Context) (context.Context, context.CancelFunc) {
	ctx = engine.WithHolder(ctx, holder, nil)
	lctx, lcancel := context.WithCancel(ctx)
	return context.WithValue(lctx, lifeKey{}, workLife{alive: alive, cancel: lcancel}), func() { lcancel(); cancel() }
}

// lifeEnded fails a port call of work whose life has ended, and ends the
// work's context.
func lifeEnded(ctx context.Context) error {
	l, ok := ctx.Value(lifeKey{}).(workLife)
	if !ok || l.alive.Err() == nil {
		return nil
	}
	l.cancel()
	return fmt.Errorf("sim: the life this work was done under ended: %w", context.Canceled)
}

// scanDeadWork takes over dead work every engine.DeadWorkScanInterval, under the
// current life, as serve's scanDeadWork does.
func (p *process) scanDeadWork(ctx context.Context) {
	w := p.w
	t := taskOf(ctx)
	w.takers[t] = true
	defer delete(w.takers, t)
	for !p.dead {
		if p.sleep(ctx, engine.DeadWorkScanInterval) != nil {
			return
		}
		holder, alive, ok := p.life()
		taker, isTaker := p.ctl.(DeadWorkTaker)
		if !ok || !isTaker || !p.up {
			continue
		}
		sctx, cancel := underLife(ctx, func() {}, holder, alive)
		n, err := taker.TakeOverDeadWork(sctx)
		cancel()
		if p.dead {
			return
		}
		if n > 0 {
			w.stats.add("liveness.taken_over", int64(n))
		}
		if err != nil {
			w.tr.add("scan of dead work (taken over %d): %v", n, sanitize(err))
		}
		// What the scan took over and could not finish is dead again
		// (its own next scan takes it: own_takeover).
		w.abandonTask("scan of dead work done")
	}
}
