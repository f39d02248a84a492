package sim

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

// Result is what one seed's run found.
type Result struct {
	Seed       uint64
	Violations []Violation
	// Trace is the last Config.TraceLines lines before the run stopped.
	Trace []string
	// Digest identifies the whole trace (two runs of a seed must agree).
	Digest string
	Stats  *Stats
	// Lifecycles counts the jobs GitHub queued.
	Lifecycles int
	// Virtual is how much virtual time the run covered.
	Virtual time.Duration
}

// Failed reports whether an invariant broke.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Run simulates one seed: runfleet (built by newController at every
// start, over state opened by backend) against a simulated GitHub and
// cloud, with faults, then a quiescence phase without them, then the final
// checks. It stops at the first broken invariant.
func Run(cfg Config, backend Backend, newController NewController) (res *Result) {
	clock := testclock.At(Epoch)
	if backend.RealTime() {
		// The DynamoDB store dates expiry by the machine's clock: the
		// virtual clock starts there and only runs ahead of it.
		clock = testclock.At(time.Now().UTC().Truncate(time.Second))
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x52554e464c454554)) // "RUNFLEET"
	w := &world{
		cfg:           cfg,
		clock:         clock,
		rng:           rng,
		sched:         newScheduler(clock, rng),
		tr:            newTrace(clock, traceRing),
		pools:         simPools(cfg),
		log:           slog.New(slog.DiscardHandler),
		newController: newController,
		backend:       backend,
		faultsOn:      true,
		forced:        map[string]bool{},
		stats:         newStats(),
		procs:         map[int]*process{},
		holds:         map[string]held{},
		dead:          map[string]deadWork{},
		inHand:        map[*task]string{},
		takers:        map[*task]bool{},
	}
	if cfg.Echo != nil {
		w.tr.echo = cfg.Echo
	}
	if cfg.LogToTrace {
		w.log = traceLogger(w)
	}
	w.tr.who = w.sched.who
	w.sched.genAlive = func(gen int) bool { p := w.procs[gen]; return p != nil && !p.dead }
	w.gh = newGitHubWorld(w)
	w.cloud = newCloud(w)
	if cfg.ScaleSet != nil {
		w.actions = newActionsService(w, *cfg.ScaleSet)
	}
	defer func() {
		if r := recover(); r != nil {
			w.broken = true
			w.violate("the simulation runs to its end", "%v", r)
		}
		res = w.finish()
	}()

	w.addForeignRunners()
	lastArrival := w.scheduleJobs()
	w.planScaleSetDeletion(lastArrival)
	w.planOutage(lastArrival)
	w.start()

	// Load: jobs arrive and every fault is on, until a few minutes after
	// the last arrival.
	if !w.runUntil(lastArrival.Add(5*time.Minute), nil) {
		return
	}
	// Quiescence: faults stop; approvals come through; the world drains
	// (no job runs, none runfleet knows of is queued), then several
	// reconcile intervals more pass before the final checks.
	w.faultsOn = false
	w.tr.add("=== faults off: quiescence ===")
	for _, j := range w.gh.jobs {
		w.gh.approve(j)
	}
	if !w.runUntil(w.now().Add(drainLimit), w.drained) {
		return
	}
	w.tr.add("=== drained (or gave up draining): %s ===", w.undrained())
	settle := cfg.Quiescence
	if cfg.LongTail {
		settle += 25 * time.Hour
	}
	if !w.runUntil(w.now().Add(settle), nil) {
		return
	}
	// The final checks look at one moment, and a reconciler that keeps warm
	// runners reaps and refills them at any moment: a delete begun a second
	// before is in flight, not stuck. So they wait for a moment with
	// nothing in flight — at most inFlightLimit, past which a transitional
	// instance is stuck and fails the checks as before. A run with nothing
	// in flight at the end of its settling is unchanged.
	if !w.runUntil(w.now().Add(inFlightLimit), w.nothingInFlight) {
		return
	}
	w.tr.add("=== final checks ===")
	w.checkQuiescence()
	return
}

// traceRing is how many trace lines a run keeps, to find the ones about a
// violation's subjects.
const traceRing = 20000

// drainLimit bounds how long the quiescence phase waits for the world to
// drain before checking anyway.
const drainLimit = 6 * time.Hour

// runUntil steps the world until the clock reaches deadline, done reports
// true, or an invariant breaks (then it returns false).
func (w *world) runUntil(deadline time.Time, done func() bool) bool {
	for !w.failed() {
		if done != nil && done() {
			return true
		}
		if len(w.sched.ready) == 0 {
			if w.waitRealTime() {
				continue
			}
			next, ok := w.sched.nextEventAt()
			if !ok || next.After(deadline) {
				w.clock.AdvanceTo(deadline)
				return true
			}
		}
		w.sched.step()
		w.afterStep()
	}
	return false
}

// afterStep buries a process that died during the step and checks the
// invariants that must hold at every moment.
func (w *world) afterStep() {
	w.buryDead()
	w.checkSafety()
	if w.actions != nil {
		w.actions.checkRestart()
	}
}

// start starts a runfleet process over the state its predecessor left
// (the primary, on a shared store).
func (w *world) start() {
	gen := w.newGen()
	p := &process{w: w, gen: gen}
	w.proc = p
	w.procs[gen] = p
	st, err := w.openState()
	if err != nil {
		w.violate("runfleet starts from the state it left", "%v", err)
		return
	}
	p.state = st
	w.heldQueue = st.Queue
	storeIface, sp := wrapStore(st.Store, p)
	p.store = sp
	p.queue = &queuePort{Queue: st.Queue, p: p}
	deps := w.deps(p, storeIface)
	w.tr.add("runfleet gen %d starting", gen)
	p.startLiveness()
	p.spawn("start", func(ctx context.Context) {
		var recover func(context.Context) error
		ctl, err := w.newController(ctx, deps)
		if err == nil {
			p.ctl = ctl
			if !w.sharedStore() {
				// As serve does on a store it owns alone; on a shared
				// one another replica may be at that work right now.
				recover, err = ctl.LeftInFlight(ctx)
			}
		}
		if p.dead {
			return
		}
		if err != nil {
			w.startFailures++
			w.stats.inc("process.start_failed")
			if w.startFailures > maxStartFailures {
				w.violate("runfleet starts from the state it left", "%d starts in a row failed; the last: %v", w.startFailures, err)
			}
			p.die(fmt.Sprintf("start failed, the process exits: %v", err))
			return
		}
		w.startFailures = 0
		p.up = true
		w.tr.add("runfleet gen %d up", gen)
		// As serve does: the recovery goes on beside the workers, which
		// start at once.
		if recover != nil {
			p.spawn("start", func(ctx context.Context) {
				if err := recover(ctx); err != nil && !p.dead {
					w.tr.add("recovering what gen %d left in flight failed (the reconciler retries it): %v", gen-1, err)
				}
			})
		}
		p.pokeWorkers()
		w.sched.after(between(w.rng, time.Second, w.cfg.ReconcileInterval), gen, p.tick)
		p.startListener(ctx)
		w.startReplicas()
	})
}

// deps are the ports of process p, whose store is storeIface.
func (w *world) deps(p *process, storeIface store.Store) Deps {
	deps := Deps{
		ControllerID:    controllerID,
		Store:           storeIface,
		Queue:           p.queue,
		GitHub:          w.routeScaleSet(p, w.gitHubPort(p)),
		Providers:       map[string]providers.Provider{},
		Pools:           w.pools,
		Now:             w.clock.Now,
		Logger:          w.log,
		ProviderTimeout: providerTimeout,
		BackoffMin:      time.Second,
		BackoffMax:      5 * time.Minute,
		Rand:            rngReader{w.rng},
	}
	if w.backend.RealTime() {
		deps.BackoffMax = 30 * time.Second
	}
	for _, pool := range w.pools {
		deps.Providers[pool.Name] = &providerAPI{
			c: w.cloud, p: p, pool: pool.Name,
			noopByName:    contains(w.cfg.Provider.DeleteByNameNoop, pool.Name),
			createTimeout: pool.BootstrapTimeout, timeout: providerTimeout,
		}
	}
	return deps
}

// maxStartFailures: a start that keeps failing (serve exits; its
// supervisor restarts it) is an outage, not a transient.
const maxStartFailures = 20

// bury lets a dead process's tasks unwind, closes its state as the kernel
// would release its files (a state it owned alone: a shared store stays
// up), and has a supervisor restart it a little later.
func (w *world) bury(p *process) {
	p.buried = true
	delete(w.procs, p.gen)
	w.sched.kill(p.gen)
	if !w.sharedStore() && p.state.Close != nil {
		if err := p.state.Close(); err != nil {
			w.tr.add("closing gen %d's state: %v", p.gen, err)
		}
	}
	restart := w.start
	if i := p.replica; i > 0 {
		restart = func() { w.startReplica(i) }
	}
	w.sched.after(between(w.rng, time.Second, 10*time.Second), 0, restart)
}

// finish stops every task left and reports.
func (w *world) finish() *Result {
	for _, gen := range slices.Sorted(maps.Keys(w.procs)) {
		p := w.procs[gen]
		p.dead, p.buried = true, true
		p.stopLeaders()
		w.sched.kill(p.gen)
		if !w.sharedStore() && p.state.Close != nil {
			_ = p.state.Close()
		}
	}
	if w.shared != nil && w.shared.Close != nil {
		_ = w.shared.Close()
	}
	return &Result{
		Seed:       w.cfg.Seed,
		Violations: w.violations,
		Trace:      w.reportTrace(),
		Digest:     w.tr.digest(),
		Stats:      w.stats,
		Lifecycles: len(w.gh.jobs),
		Virtual:    w.now().Sub(w.tr.start),
	}
}

// reportTrace is the trace as it stood at the first violation, else its
// end.
func (w *world) reportTrace() []string {
	if w.firstTrace != nil {
		return w.firstTrace
	}
	return w.reportLines(nil)
}

// drained: no job is running, and none runfleet was told about and could
// serve is still queued.
// inFlightLimit bounds the final checks' wait for a moment with nothing
// in flight: longer than any create or delete takes once faults are off.
const inFlightLimit = 10 * time.Minute

// nothingInFlight reports, every ten virtual seconds, whether every live
// instance is running (what the final checks ask of every instance).
func (w *world) nothingInFlight() bool {
	if w.now().Before(w.nextInFlightCheck) {
		return false
	}
	w.nextInFlightCheck = w.now().Add(10 * time.Second)
	p := w.proc
	if p == nil || !p.up {
		return true // the final checks say so
	}
	live, err := p.state.Store.ListLiveInstances(context.Background())
	if err != nil {
		return true // the final checks say so
	}
	for _, inst := range live {
		if inst.Status != runner.StatusRunning {
			return false
		}
	}
	return true
}

func (w *world) drained() bool {
	if w.now().Before(w.nextDrainCheck) {
		return false
	}
	w.nextDrainCheck = w.now().Add(time.Minute)
	return w.undrained() == "nothing left"
}

// undrained names what keeps the world from being quiet.
func (w *world) undrained() string {
	var left []string
	for _, j := range w.gh.jobs {
		if j.Status == jobInProgress || (j.Status == jobQueued && j.Pool != "") {
			left = append(left, fmt.Sprintf("job %d %s", j.ID, j.Status))
		}
	}
	if n := w.gh.deliveriesInFlight; n > 0 {
		left = append(left, fmt.Sprintf("%d webhook deliveries on their way", n))
	}
	if len(left) == 0 {
		return "nothing left"
	}
	return strings.Join(left, ", ")
}

func (w *world) maxRunners(pool string) int {
	if p, ok := w.pools.Get(pool); ok {
		return p.MaxRunners
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
