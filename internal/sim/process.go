package sim

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/queue"
)

// process is one incarnation of `runfleet serve`: the state it opened, the
// controller built over it, its queue workers and its reconcile ticker.
// When it dies everything it held in memory is gone; only the store, the
// queue, GitHub and the cloud remain.
type process struct {
	w   *world
	gen int
	// replica numbers a worker replica (2, 3, …: replicas.go); 0 is the
	// primary, the process that takes webhooks and reconciles.
	replica int
	state   State
	store   *storePort
	queue   *queuePort
	ctl     Controller
	// up: started and recovered, taking webhooks and work.
	up bool
	// dead: crashed (or exited); buried once its tasks have unwound.
	dead, buried bool
	busyWorkers  int
	reconciling  bool
	// stops end the contexts of the tasks run under internal/leader (the
	// listener, the liveness), whose loops look at their context rather
	// than at the process's death.
	stops []context.CancelFunc
	// lives is the process's liveness (shared store only: liveness.go);
	// awaitingLife, that its idle workers look again for a life soon.
	lives        *leader.Liveness
	awaitingLife bool
}

// stopLeaders ends the tasks run under internal/leader.
func (p *process) stopLeaders() {
	for _, stop := range p.stops {
		stop()
	}
}

// errNotSent is errKilled for a call the process never got to make.
var errNotSent = fmt.Errorf("%w (before the call was made)", errKilled)

// enter is every port call's first step: the task gives the turn back, so
// that any other task may run first, and learns whether its process is
// still alive.
func (p *process) enter(ctx context.Context) error {
	if p.dead {
		return errKilled
	}
	if err := p.w.sched.yield(ctx); err != nil {
		return err
	}
	if p.dead {
		return errKilled
	}
	return lifeEnded(ctx)
}

// sleep is virtual time spent inside a call.
func (p *process) sleep(ctx context.Context, d time.Duration) error {
	if p.dead {
		return errKilled
	}
	if err := p.w.sched.sleep(ctx, d); err != nil {
		return err
	}
	if p.dead {
		return errKilled
	}
	return nil
}

// nap is sleep that hold's nap may end early.
func (p *process) nap(ctx context.Context, d time.Duration, hold func(*nap)) error {
	if p.dead {
		return errKilled
	}
	if err := p.w.sched.napFor(ctx, d, hold); err != nil {
		return err
	}
	if p.dead {
		return errKilled
	}
	return nil
}

// die ends the process where it stands.
func (p *process) die(reason string) {
	if p.dead {
		return
	}
	p.dead, p.up = true, false
	p.stopLeaders()
	p.w.stats.inc("process.died")
	if p.replica > 0 {
		p.w.stats.inc("process.replica_died")
	}
	p.w.tr.add("CRASH gen %d: %s", p.gen, reason)
	p.w.abandon(func(t *task) bool { return t.gen == p.gen }, fmt.Sprintf("gen %d died: %s", p.gen, reason), true)
	for t, name := range p.w.inHand {
		if t.gen == p.gen {
			delete(p.w.inHand, t)
			if p.w.sharedStore() {
				// Its message comes back after the visibility timeout:
				// what it waits for now is that, not GitHub's budget.
				p.w.gh.stopsWaiting(name)
			}
		}
	}
}

type crashWhen int

const (
	noCrash crashWhen = iota
	crashBefore
	crashAfter
)

// crashPoint decides whether the process dies at this write, and on which
// side of it.
func (p *process) crashPoint() crashWhen {
	w := p.w
	if !w.faultsOn || !chance(w.rng, w.cfg.Crashes.PerWrite) {
		return noCrash
	}
	if w.rng.IntN(2) == 0 {
		w.stats.inc("fault.crash.before_write")
		return crashBefore
	}
	w.stats.inc("fault.crash.after_write")
	return crashAfter
}

func (p *process) spawn(name string, fn func(ctx context.Context)) {
	p.w.sched.spawn(name, p.gen, p.holding(fn))
}

// holding runs a task's fn, after which whatever the task still holds in
// creating or deleting is nobody's work (deadwork.go); a task of a dead
// process left it when the process died.
func (p *process) holding(fn func(ctx context.Context)) func(ctx context.Context) {
	return func(ctx context.Context) {
		fn(ctx)
		if !p.dead {
			p.w.abandonTask("task " + taskOf(ctx).name + " ended")
		}
	}
}

// visibility is serve's default visibility timeout; with SQS it is real
// time, so that run uses a short one.
func (p *process) visibility() time.Duration {
	if p.w.backend.RealTime() {
		return 2 * time.Second
	}
	return 5 * time.Minute
}

// pokeWorkers starts idle queue workers: something may be visible.
func (p *process) pokeWorkers() {
	for p.up && !p.dead && p.busyWorkers < p.w.cfg.Workers {
		p.busyWorkers++
		name := fmt.Sprintf("worker-%d", p.busyWorkers)
		if p.replica > 0 {
			name = fmt.Sprintf("r%d-%s", p.replica, name)
		}
		p.spawn(name, p.work)
	}
}

// wakeAt pokes the workers when something becomes visible, as a blocked
// long-poll would wake.
func (p *process) wakeAt(t time.Time) {
	p.w.sched.at(t, p.gen, p.pokeWorkers)
}

// work takes messages until none is visible.
func (p *process) work(ctx context.Context) {
	defer func() { p.busyWorkers-- }()
	for !p.dead {
		if _, _, ok := p.life(); p.lives != nil && !ok {
			// Between lives no message is received (engine.Work): a
			// message received now could not be claimed under a live
			// holder. Serve's worker looks again every 500 ms; here one
			// poke for all the workers, which would otherwise each
			// schedule one that starts them all again.
			if !p.awaitingLife {
				p.awaitingLife = true
				p.w.sched.after(500*time.Millisecond, p.gen, func() {
					p.awaitingLife = false
					p.pokeWorkers()
				})
			}
			return
		}
		msgs, err := p.queue.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: p.visibility()})
		if err != nil || len(msgs) == 0 {
			return
		}
		if !p.handle(ctx, msgs[0]) {
			p.w.queueReleased(msgs[0].ID)
		}
	}
}

// handle does one message's work and reports whether it was
// acknowledged. As serve's worker does (engine.Engine.Work), the work runs
// under a deadline of the message's visibility, which the engine's claims
// are bounded by, and a failed message is done again while it is still
// the worker's (repeatAfter), then left for redelivery.
func (p *process) handle(ctx context.Context, m queue.Message) bool {
	w := p.w
	w.stats.inc("messages.kind." + messageKind(m.Body))
	w.takeInHand(messageInstance(m.Body))
	until := w.now().Add(p.visibility())
	// As serve's worker does, the message is done under the life current
	// when it was received (liveness.go).
	holder, alive, live := p.life()
	if p.lives != nil && !live {
		w.tr.add("message %s (receive %d): this process's liveness lapsed; left for redelivery", m.ID, m.ReceiveCount)
		w.abandonTask(fmt.Sprintf("message %s left for redelivery (liveness lapsed)", m.ID))
		return false
	}
	var ack bool
	var err error
	for try := 0; ; try++ {
		hctx, cancel := p.workContext(ctx, until)
		if live {
			hctx, cancel = underLife(hctx, cancel, holder, alive)
		}
		ack, err = p.ctl.HandleMessage(hctx, m.ID, m.ReceiveCount, m.Body)
		cancel()
		if p.dead {
			return false
		}
		if err == nil || ack {
			break
		}
		if live && alive.Err() != nil {
			// The life ended under the work: it is the others' now.
			w.stats.inc("messages.life_ended")
			w.tr.add("message %s (receive %d): this process's liveness lapsed during the work; it is taken over: %v", m.ID, m.ReceiveCount, sanitize(err))
			w.abandonTask(fmt.Sprintf("message %s: its life ended", m.ID))
			return false
		}
		wait, again := repeatAfter(try, time.Second, until.Sub(w.now()))
		if !again || w.cfg.PlainWorker {
			w.stats.inc("messages.failed")
			w.tr.add("message %s (receive %d) failed, left for redelivery: %v", m.ID, m.ReceiveCount, sanitize(err))
			w.abandonTask(fmt.Sprintf("message %s left for redelivery", m.ID))
			return false
		}
		w.stats.inc("messages.repeated")
		w.tr.add("message %s (receive %d) failed, done again in %s: %v", m.ID, m.ReceiveCount, wait, sanitize(err))
		if p.sleep(ctx, wait) != nil {
			return false
		}
	}
	if err != nil {
		w.stats.inc("messages.malformed")
		w.tr.add("message %s malformed, dropped: %v", m.ID, err)
	} else {
		w.stats.inc("messages.done")
	}
	w.abandonTask(fmt.Sprintf("message %s done", m.ID))
	if err := p.queue.Ack(ctx, m); err != nil {
		if !p.dead {
			w.tr.add("ack %s failed: %v", m.ID, err)
		}
		return false
	}
	return true
}

// workContext is a try's context under the message's visibility, which
// ends at until on the virtual clock. The engine reads the deadline as
// real time left (time.Until, for a claim's ClaimUntil), so each try gets
// a real-time deadline of what is left of the visibility on the virtual
// clock: it never expires in a run (real time barely moves), and a claim
// made at a try's start is bounded as serve's would be. A real-time
// queue's visibility (2 s of real time) could run out mid-call: no
// deadline there, nor for the plain worker.
func (p *process) workContext(ctx context.Context, until time.Time) (context.Context, context.CancelFunc) {
	if p.w.backend.RealTime() || p.w.cfg.PlainWorker {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, until.Sub(p.w.now()))
}

// repeatAfter is serve's worker's wait before its try-th repeat (from 0)
// of a failed message, and whether to repeat at all: 1, 2, 4, 8 s, not
// when the wait would outlast the visibility left (the engine's
// retryFailedAfter with WorkerOptions' default RetryAfter, which the
// engine does not export).
func repeatAfter(try int, base, left time.Duration) (time.Duration, bool) {
	if try >= 4 || base <= 0 {
		return 0, false
	}
	wait := base << try
	return wait, wait < left
}

// untilStamp matches the claim bound an engine error quotes, to the
// second of a real-time deadline's remainder (handle).
var untilStamp = regexp.MustCompile(`\(until [^)]*\)`)

// sanitize is an error's text for the trace, without what real time can
// shift by a second: a claim's bound is the virtual now plus the real
// time left of the worker's deadline, which a loaded machine makes a few
// microseconds shorter or longer from one run to the next.
func sanitize(err error) string {
	return untilStamp.ReplaceAllString(err.Error(), "(until …)")
}

// tick runs a reconcile pass (one at a time) every interval, and now and
// then an operator's forced delete.
func (p *process) tick() {
	w := p.w
	if !p.up || p.dead {
		return
	}
	if !p.reconciling {
		p.reconciling = true
		p.spawn("reconcile", func(ctx context.Context) {
			defer func() { p.reconciling = false }()
			w.stats.inc("reconcile.passes")
			err := p.ctl.Reconcile(ctx)
			if p.dead {
				return
			}
			if err != nil {
				w.stats.inc("reconcile.errors")
				w.tr.add("reconcile pass: %v", err)
				return
			}
			w.tr.add("reconcile pass done")
		})
	}
	if w.faultsOn && chance(w.rng, w.cfg.World.ForceDelete) {
		w.operatorForceDelete(p)
	}
	if w.backend.RealTime() {
		// A message a real-time queue shows again after its real
		// visibility timeout wakes no one on the virtual clock.
		p.pokeWorkers()
	}
	w.sched.after(w.cfg.ReconcileInterval, p.gen, p.tick)
}

// messageInstance reads the instance a create or delete message names
// ("" for other kinds), as messageKind reads its kind.
func messageInstance(body []byte) string {
	if k := messageKind(body); k != "create" && k != "delete" {
		return ""
	}
	_, rest, ok := strings.Cut(string(body), `"instance":"`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

// messageKind reads the "kind" of a queue message for the figures, without
// decoding it (the controller owns the format).
func messageKind(body []byte) string {
	_, rest, ok := strings.Cut(string(body), `"kind":"`)
	if !ok {
		return "other"
	}
	kind, _, _ := strings.Cut(rest, `"`)
	return kind
}
