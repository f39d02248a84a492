package sim

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/providers"
)

// Spot interruptions: the cloud takes a machine back. On AWS, EC2 warns
// two minutes ahead (EventBridge delivers the warning to the engine's
// HandleInterruption, at least once), then terminates the machine and
// lists it, for about an hour, as ended by Server.SpotInstanceTermination
// (what serve's reconcile passes poll through ListInterrupted). A job
// running on the machine fails once GitHub has lost its runner
// (githubWorld.machineGone), and runfleet owes it one re-run.

// spotWarning is EC2's lead time between the warning and the termination.
const spotWarning = 2 * time.Minute

// interruptedListed is how long the provider keeps listing a machine it
// took back (EC2 keeps a terminated instance about an hour).
const interruptedListed = time.Hour

// planInterruption schedules the cloud taking m back 30 s – 8 min after it
// was made, announced two minutes ahead on a seed with warnings.
func (c *cloud) planInterruption(m *machine) {
	w := c.w
	at := between(w.rng, 30*time.Second, 8*time.Minute)
	if !c.warns {
		w.sched.after(at, 0, func() { c.interrupt(m) })
		return
	}
	w.sched.after(at, 0, func() {
		if !m.alive || !w.faultsOn {
			return
		}
		w.tr.add("cloud: spot interruption warning for machine %s (%s)", m.pid, m.name)
		m.warnedAt = w.now()
		c.warn(m)
		if chance(w.rng, w.cfg.Provider.SpotWarningTwice) {
			w.stats.inc("fault.provider.spot_warning_twice")
			w.sched.after(between(w.rng, time.Second, 3*time.Minute), 0, func() { c.warn(m) })
		}
		w.sched.after(spotWarning, 0, func() { c.interrupt(m) })
	})
}

// interrupt takes the machine back, unless runfleet deleted it first.
func (c *cloud) interrupt(m *machine) {
	w := c.w
	if !m.alive || !w.faultsOn {
		return
	}
	w.stats.inc("fault.provider.spot_interruption")
	if r := m.runner; r != nil && r.running() {
		w.stats.inc("fault.provider.spot_interruption_under_a_job")
	}
	m.interruptedAt = w.now()
	c.destroy(m, causeSpot)
}

// warn delivers one EventBridge warning to the process, if it is up to
// take it; one that finds it down is lost (the polling still finds the
// machine once it is gone).
func (c *cloud) warn(m *machine) {
	w := c.w
	p := w.proc
	var h InterruptionHandler
	if p != nil && p.up && !p.dead {
		h, _ = p.ctl.(InterruptionHandler)
	}
	if h == nil {
		w.stats.inc("spot.warning_lost_process_down")
		w.tr.add("cloud: spot warning for %s lost: runfleet is down", m.pid)
		return
	}
	w.stats.inc("spot.warning_delivered")
	warnedAt := m.warnedAt
	p.spawn("eventbridge "+m.pid, func(ctx context.Context) {
		result, err := h.HandleInterruption(ctx, m.pid, warnedAt)
		if err != nil {
			w.tr.add("spot warning %s (%s): error %v", m.pid, m.name, err)
			return
		}
		if result != engine.InterruptionNotOurs {
			m.warningTaken = true
		}
		w.tr.add("spot warning %s (%s): %s", m.pid, m.name, result)
	})
}

// ListInterrupted lists the pool's machines the cloud took back within the
// last hour, as the EC2 provider does; like a list, it may fail.
func (a *providerAPI) ListInterrupted(ctx context.Context, poolID string) ([]providers.Instance, error) {
	w := a.c.w
	fault, err := a.call(ctx, "list_interrupted", 200*time.Millisecond, 2*time.Second, true)
	if err != nil {
		return nil, err
	}
	if err := a.settle(ctx, "list_interrupted", a.pool, fault, a.timeout, func() {}); err != nil {
		return nil, err
	}
	var out []providers.Instance
	for _, m := range a.c.machines {
		if !m.interruptedAt.IsZero() && m.poolID == poolID && w.now().Sub(m.interruptedAt) < interruptedListed {
			out = append(out, providers.Instance{ProviderID: m.pid, Name: m.name, Status: providers.StatusStopped, TakenBackAt: m.interruptedAt})
		}
	}
	if len(out) > 0 {
		w.tr.add("provider list_interrupted %s -> %d machines", a.pool, len(out))
	}
	return out, nil
}

var _ providers.InterruptionLister = (*providerAPI)(nil)
