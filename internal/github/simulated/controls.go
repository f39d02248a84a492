package simulated

import (
	"time"
)

// SetBusy marks every runner named name as running a job (busy runners are
// online) or not. It reports whether any runner has that name.
func (g *GitHub) SetBusy(name string, busy bool) bool {
	return g.update(name, func(r *RegisteredRunner) {
		r.Busy = busy
		if busy {
			r.Status = StatusOnline
		}
	})
}

// SetOnline marks every runner named name online or offline, as its agent
// connects or drops. Offline runners are never busy.
func (g *GitHub) SetOnline(name string, online bool) bool {
	return g.update(name, func(r *RegisteredRunner) {
		r.Status = StatusOffline
		if online {
			r.Status = StatusOnline
		} else {
			r.Busy = false
		}
	})
}

// Deregister removes every runner named name the way GitHub itself does: a
// JIT runner after its one job, or an offline runner after GitHub's cleanup
// period. It reports whether any runner had that name.
func (g *GitHub) Deregister(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deregisterLocked(name)
}

func (g *GitHub) deregisterLocked(name string) bool {
	named := g.runners.named(name)
	found := len(named) > 0
	for _, r := range named {
		g.runners.remove(r)
	}
	return found
}

func (g *GitHub) update(name string, change func(*RegisteredRunner)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	named := g.runners.named(name)
	for _, r := range named {
		change(r)
	}
	return len(named) > 0
}

// FailNext makes the next call of op return err without any effect.
// Several calls queue up, one failure per call.
func (g *GitHub) FailNext(op Op, err error) {
	g.inject(op, injectedFailure{err: err})
}

// FailNextAfterEffect makes the next call of op take effect and still
// return err — GitHub sometimes registers a runner yet answers with an
// error, so a retry then meets ErrRunnerNameTaken.
func (g *GitHub) FailNextAfterEffect(op Op, err error) {
	g.inject(op, injectedFailure{err: err, afterEffect: true})
}

func (g *GitHub) inject(op Op, f injectedFailure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.injected[op] = append(g.injected[op], f)
}

// RateLimit makes every call fail with a *github.RateLimitError until the
// given time (by the simulation's clock); the zero time lifts it.
func (g *GitHub) RateLimit(until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rateLimitUntil = until
}

// SetNow replaces the clock the rate limit is measured by (default
// time.Now), so tests can move time instead of sleeping.
func (g *GitHub) SetNow(now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = now
}

// Calls is how many times op was called, failed calls included: each one
// spends rate-limit budget on real GitHub.
func (g *GitHub) Calls(op Op) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[op]
}

// TotalCalls is the number of calls of every operation.
func (g *GitHub) TotalCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	total := 0
	for _, n := range g.calls {
		total += n
	}
	return total
}

// ResetCalls zeroes the call counters (e.g. between benchmark phases).
func (g *GitHub) ResetCalls() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.calls)
}

// Runners returns a snapshot of every registered runner, by id.
func (g *GitHub) Runners() []RegisteredRunner {
	g.mu.Lock()
	defer g.mu.Unlock()
	sorted := g.runners.all()
	out := make([]RegisteredRunner, len(sorted))
	for i, r := range sorted {
		out[i] = RegisteredRunner{Owner: r.Owner, Runner: copyRunner(r.Runner)}
	}
	return out
}
