package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// process is one incarnation of `runfleet serve`: the state it opened, the
// controller built over it, its queue workers and its reconcile ticker.
// When it dies everything it held in memory is gone; only the store, the
// queue, GitHub and the cloud remain.
type process struct {
	w     *world
	gen   int
	state State
	store *storePort
	queue *queuePort
	ctl   Controller
	// up: started and recovered, taking webhooks and work.
	up bool
	// dead: crashed (or exited); buried once its tasks have unwound.
	dead, buried bool
	busyWorkers  int
	reconciling  bool
	// stopListener ends the listener's context (scale-set worlds).
	stopListener context.CancelFunc
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
	return nil
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
	if p.stopListener != nil {
		p.stopListener()
	}
	p.w.stats.inc("process.died")
	p.w.tr.add("CRASH gen %d: %s", p.gen, reason)
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
	p.w.sched.spawn(name, p.gen, fn)
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
		p.spawn(fmt.Sprintf("worker-%d", p.busyWorkers), p.work)
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
		msgs, err := p.queue.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: p.visibility()})
		if err != nil || len(msgs) == 0 {
			return
		}
		if !p.handle(ctx, msgs[0]) {
			p.w.queueReleased(msgs[0].ID)
		}
	}
}

// handle does one message's work and reports whether it was acknowledged.
func (p *process) handle(ctx context.Context, m queue.Message) bool {
	p.w.stats.inc("messages.kind." + messageKind(m.Body))
	ack, err := p.ctl.HandleMessage(ctx, m.ID, m.ReceiveCount, m.Body)
	switch {
	case p.dead:
		return false
	case err != nil && !ack:
		p.w.stats.inc("messages.failed")
		p.w.tr.add("message %s (receive %d) failed, left for redelivery: %v", m.ID, m.ReceiveCount, err)
		return false
	case err != nil:
		p.w.stats.inc("messages.malformed")
		p.w.tr.add("message %s malformed, dropped: %v", m.ID, err)
	default:
		p.w.stats.inc("messages.done")
	}
	if err := p.queue.Ack(ctx, m); err != nil {
		if !p.dead {
			p.w.tr.add("ack %s failed: %v", m.ID, err)
		}
		return false
	}
	return true
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
