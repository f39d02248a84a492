package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// cloud is the compute provider's side of the world: machines, which boot
// a while after they are made and then start the JIT runner whose
// configuration they were given, and which the cloud may take away at any
// time (spot interruption). Like GitHub, it outlives runfleet's process.
type cloud struct {
	w        *world
	machines []*machine
	byPID    map[string]*machine
	seq      int
	// warns: this seed's engine hears of each spot interruption two
	// minutes ahead (EventBridge), not only by polling.
	warns bool
}

type machine struct {
	pid, name string
	pool      string
	poolID    string
	alive     bool
	createdAt time.Time
	foreign   bool
	// jit is the runner registration whose configuration the machine got
	// (the one registered under its name when it was made); runner is set
	// once it booted and that runner came online.
	jit    *ghRunner
	runner *ghRunner
	// interruptedAt is when the cloud took the machine back (spot); zero
	// for a machine that was not. warnedAt is when EC2 warned it would.
	interruptedAt, warnedAt time.Time
	// warningTaken: runfleet took a warning about the machine in (its
	// HandleInterruption recorded it). A machine destroyed by anything
	// else during the warning — an operator's forced delete, a sweep —
	// was doomed anyway: a job it ran was failed by the interruption.
	warningTaken bool
}

func newCloud(w *world) *cloud {
	return &cloud{w: w, byPID: map[string]*machine{}, warns: chance(w.rng, w.cfg.Provider.SpotWarnings)}
}

// launch makes a machine for an instance name; it boots after 20–90 s, or
// 4–9 min when slow.
func (c *cloud) launch(pool, poolID, name string) *machine {
	w := c.w
	c.seq++
	m := &machine{pid: fmt.Sprintf("i-%06d", c.seq), name: name, pool: pool, poolID: poolID, alive: true, createdAt: w.now()}
	m.jit = w.gh.registeredByName(name)
	for _, other := range c.machines {
		if other.alive && other.name == name {
			w.violateAbout([]string{name}, "never two live machines for one instance", "machine %s made for %s while %s (made %s ago) still runs", m.pid, name, other.pid, w.now().Sub(other.createdAt))
		}
	}
	c.machines = append(c.machines, m)
	c.byPID[m.pid] = m
	w.stats.inc("machines.made")
	w.checkMadeForFinished(name)
	if max := w.maxRunners(pool); c.counted(pool) > max {
		var names, subjects []string
		for _, m := range c.machines {
			if m.alive && m.pool == pool {
				names = append(names, m.pid+" "+m.name+" ("+w.recordOf(m.name)+")")
				if w.recordOf(m.name) != string(runner.StatusRunning) {
					subjects = append(subjects, m.name+" ", m.pid)
				}
			}
		}
		w.violateAbout(subjects, "never more than max_runners machines per pool", "pool %s has %d live machines, max_runners %d: %s", pool, c.counted(pool), max, strings.Join(names, ", "))
	}
	boot := between(w.rng, 20*time.Second, 90*time.Second)
	if w.faultsOn && chance(w.rng, w.cfg.Provider.SlowBoot) {
		w.stats.inc("fault.provider.slow_boot")
		boot = between(w.rng, 4*time.Minute, 9*time.Minute)
	}
	w.tr.add("cloud: machine %s launched for %s, boots in %s", m.pid, name, boot.Round(time.Second))
	w.sched.after(boot, 0, func() { c.boot(m) })
	if w.faultsOn && chance(w.rng, w.cfg.Provider.Spot) {
		c.planInterruption(m)
	}
	return m
}

// boot starts the machine's runner with the configuration it was given:
// it comes online only if that registration still exists and no other
// machine used it.
func (c *cloud) boot(m *machine) {
	w := c.w
	if !m.alive {
		return
	}
	r := m.jit
	if r == nil || !r.registered || r.machine != nil {
		w.stats.inc("machines.booted_without_runner")
		w.tr.add("cloud: machine %s (%s) booted, but its JIT runner is gone or used: no runner", m.pid, m.name)
		return
	}
	r.machine, r.online, m.runner = m, true, r
	w.stats.inc("machines.runner_online")
	w.tr.add("cloud: machine %s booted; runner %s (id %d) online", m.pid, r.Name, r.ID)
	w.gh.assignSoon()
}

// destroy ends a machine. Unless the cloud took it (spot) or an operator
// forced its instance's delete, the runner on it must not be running a
// job (lessons-from-peers P9, P15).
func (c *cloud) destroy(m *machine, cause string) {
	w := c.w
	if !m.alive {
		return
	}
	if r := m.runner; r != nil && r.running() && cause != causeSpot && !w.forced[m.name] {
		w.violateAbout([]string{m.name, m.pid}, "never a machine destroyed while its runner runs a job", "machine %s (%s) destroyed by %s while runner %s runs job %d", m.pid, m.name, cause, r.Name, r.job.ID)
	}
	m.alive = false
	w.stats.inc("machines.destroyed_by_" + cause)
	w.tr.add("cloud: machine %s (%s) destroyed (%s)", m.pid, m.name, cause)
	w.gh.machineGone(m)
}

const (
	causeDelete = "delete"
	causeSpot   = "spot"
)

// counted is the pool's live machines that count against max_runners:
// all but those an operator's forced delete gave up on. A forced delete
// completes even when the provider keeps failing (lessons P8): the
// operator took the machine out of runfleet's hands, and the reconciler
// deletes it as an orphan on a later pass — the same exemption the
// "never destroyed while running a job" invariant makes for forced deletes.
// Quiescence still requires every such machine gone.
func (c *cloud) counted(pool string) int {
	n := 0
	for _, m := range c.machines {
		if m.alive && m.pool == pool && !c.w.forced[m.name] {
			n++
		}
	}
	return n
}

func (c *cloud) aliveByName(name string) []*machine {
	var out []*machine
	for _, m := range c.machines {
		if m.alive && m.name == name {
			out = append(out, m)
		}
	}
	return out
}
