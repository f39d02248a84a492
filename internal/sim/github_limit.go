package sim

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/github/spread"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// GitHub's secondary limit as the simulation plays it, and runfleet's
// budget in front of it. GitHub counts the points of the calls it
// answered in the last 60 s; a call that would go past the limit is
// refused (403, retry-after 60 s) and starts a penalty, and every call
// during the penalty is refused and extends it. runfleet's budget (the
// real internal/github/budget, on the simulation's clock) paces the
// port's calls before they reach GitHub, as the REST adapter's pacer does,
// so GitHub must never refuse one: a refusal the fault model did not
// inject is a broken invariant.

// penaltyFor is how long a refusal's penalty lasts (GitHub's retry-after).
const penaltyFor = time.Minute

// secondaryLimit is GitHub's side: one installation's window.
type secondaryLimit struct {
	perMinute    int
	spent        []spend
	penaltyUntil time.Time
}

type spend struct {
	at   time.Time
	cost int
}

// admit charges a call of cost at now, or refuses it.
func (l *secondaryLimit) admit(now time.Time, cost int) (refused bool) {
	if l.perMinute == 0 {
		return false
	}
	if now.Before(l.penaltyUntil) {
		l.penaltyUntil = now.Add(penaltyFor)
		return true
	}
	kept, sum := l.spent[:0], 0
	for _, s := range l.spent {
		if now.Sub(s.at) < time.Minute {
			kept, sum = append(kept, s), sum+s.cost
		}
	}
	l.spent = kept
	if sum+cost > l.perMinute {
		l.penaltyUntil = now.Add(penaltyFor)
		return true
	}
	l.spent = append(l.spent, spend{now, cost})
	return false
}

// opCost is a port call's points: the writes are a POST or a DELETE.
func opCost(op string) int {
	switch op {
	case "generate_jit", "remove_runner", "rerun_job":
		return budget.WriteCost
	}
	return budget.ReadCost
}

// appCalls are the calls made as the App (its webhook delivery log): they
// spend the App's budget, not the installation's.
func appCall(op string) bool { return op == "list_deliveries" || op == "get_delivery" }

// newBudget is a process's budget for an installation, on the
// simulation's clock: its waits are the calling task's virtual sleeps.
// Replicas share its state (as serve shares it through a shared store,
// store.Budgets): their calls are one installation's.
func newBudget(w *world, p *process, installation int64) *budget.Budget {
	var meter budget.Meter
	if w.sharedStore() {
		if w.meters == nil {
			w.meters = map[int64]*budget.Memory{}
		}
		if w.meters[installation] == nil {
			w.meters[installation] = &budget.Memory{}
		}
		meter = w.meters[installation]
	}
	b, err := budget.New(budget.Options{
		Name:   "installation:" + strconv.FormatInt(installation, 10),
		Limits: budget.Limits{PointsPerMinute: w.cfg.BudgetPointsPerMinute, MaxInFlight: 100},
		Meter:  meter,
		Now:    w.clock.Now,
		Sleep:  p.sleep,
	})
	if err != nil {
		panic("sim: budget limits: " + err.Error())
	}
	return b
}

// tightLimits gives one seed in four a GitHub whose limit a burst reaches
// (a GitHub Enterprise Server with lower limits, or an installation shared
// with other tools): 60, 150 or 300 points a minute, runfleet's budget set
// to 90 % of it, as an operator would. Drawn from a stream of its own, so
// the other draws of the seed are not moved by it.
//
// And one seed in three calls GitHub through 2 or 3 Apps (extra_apps), so
// calls move between installations, each with its own budget and limit,
// and an App GitHub refused hands its call to another.
func tightLimits(cfg *Config) {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5ec0da11))
	if r.IntN(4) == 0 {
		cfg.GitHubLimit = []int{60, 150, 300}[r.IntN(3)]
		cfg.BudgetPointsPerMinute = cfg.GitHubLimit * 9 / 10
	}
	if r.IntN(3) == 0 {
		cfg.Apps = 2 + r.IntN(2)
	}
}

// limitOf is GitHub's secondary limit on one installation.
func (g *githubWorld) limitOf(installation int64) *secondaryLimit {
	l := g.limits[installation]
	if l == nil {
		l = &secondaryLimit{perMinute: g.w.cfg.GitHubLimit}
		g.limits[installation] = l
	}
	return l
}

// gitHubPort is the port a process calls GitHub through: one App's
// client, or the spread over several (internal/github/spread), as the
// wiring makes it from github.app and github.extra_apps.
func (w *world) gitHubPort(p *process) github.GitHub {
	apps := make([]spread.App, 0, max(w.cfg.Apps, 1))
	for i := range max(w.cfg.Apps, 1) {
		installation := int64(i + 1)
		apps = append(apps, &githubAPI{g: w.gh, p: p, installation: installation, budget: newBudget(w, p, installation)})
	}
	if len(apps) == 1 {
		return &heldRecorder{port: apps[0].(*githubAPI), g: w.gh}
	}
	g, err := spread.New(apps, nil)
	if err != nil {
		panic("sim: " + err.Error())
	}
	return &heldRecorder{port: g, g: w.gh}
}

// port is what gitHubPort wraps: the GitHub port and the App's delivery
// log, as the wiring's client is.
type port interface {
	github.GitHub
	github.DeliveryLog
}

// heldRecorder is the port the engine calls: it notes each JIT
// registration the engine was told to wait for (a *RateLimitError from
// the port as a whole — one App's refusal that another App made good is
// not one), for checkBudgetWait.
type heldRecorder struct {
	port
	g *githubWorld
}

func (h *heldRecorder) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	cfg, err := h.port.GenerateJITConfig(ctx, req)
	var rl *github.RateLimitError
	switch {
	case errors.As(err, &rl):
		h.g.heldCreate(req.Name, h.g.w.sched.who())
		h.g.waitsForBudget(req.Name, !rl.Paced)
	case err == nil:
		h.g.checkOldestFirst(req.Name)
	default:
		h.g.stopsWaiting(req.Name)
	}
	return cfg, err
}

// oldestFirstBound is how far out of order creates held back for GitHub's
// budget may go: a create whose wait began this much later than another's
// must not register its runner while that one still waits. Within it,
// creates due together are taken by whichever worker is free.
const oldestFirstBound = time.Minute

// budgetWait is a create waiting for GitHub's budget: since when, and in
// which process (a turn does not outlive its process).
type budgetWait struct {
	since time.Time
	gen   int
	// penalized: GitHub imposed a penalty during the wait (a refusal the
	// fault model injected): calls held by it come back together when it
	// lifts, in no order — outside the stated bound.
	penalized bool
}

// waitsForBudget notes that instance name's create waits for the budget,
// from its first hold on.
func (g *githubWorld) waitsForBudget(name string, penalty bool) {
	if g.waiting == nil {
		g.waiting = map[string]budgetWait{}
	}
	wait, ok := g.waiting[name]
	if !ok {
		wait = budgetWait{since: g.w.now(), gen: g.w.currentGen()}
	}
	if g.w.sharedStore() {
		// Its create's next message may be any replica's: the wait is
		// the order of the process that holds it now.
		wait.gen = g.w.currentGen()
	}
	wait.penalized = wait.penalized || penalty
	g.waiting[name] = wait
}

// stopsWaiting forgets a create that no longer waits for the budget (it
// failed otherwise, or its instance is on its way out).
func (g *githubWorld) stopsWaiting(name string) { delete(g.waiting, name) }

// checkOldestFirst holds the engine to "oldest first within a stated
// bound" when instance name registers its runner: no create of this
// process that began waiting for the budget oldestFirstBound or more
// before name did is still waiting. Checked with one App only: with
// several, each App's line is its own; and not for a wait GitHub's
// penalty held (runfleet's pacing keeps the order; a refusal GitHub
// imposes — which pacing exists to prevent, and the simulation injects as
// a fault — releases everything it held at once).
func (g *githubWorld) checkOldestFirst(name string) {
	w := g.w
	mine, ok := g.waiting[name]
	delete(g.waiting, name)
	if w.cfg.Apps > 1 {
		return
	}
	if !ok {
		mine = budgetWait{since: w.now(), gen: w.currentGen()}
	}
	for _, other := range slices.Sorted(maps.Keys(g.waiting)) {
		wait := g.waiting[other]
		if wait.gen == w.currentGen() && !wait.penalized && mine.since.Sub(wait.since) >= oldestFirstBound {
			w.violateAbout([]string{name, other}, "oldest first under GitHub's limit, within a minute",
				"instance %s registered its runner (waiting for the budget since %s) while %s, waiting since %s, still waits",
				name, mine.since.Sub(Epoch), other, wait.since.Sub(Epoch))
			return
		}
	}
}

// ReadyAt says when the App's budget lets a call of method go (spread
// orders the Apps by it).
func (a *githubAPI) ReadyAt(ctx context.Context, _ github.Owner, method string) (time.Time, error) {
	return a.budget.ReadyAt(ctx, budget.Cost(method))
}

// HasBudget reports whether the budget a turn names is this App's.
func (a *githubAPI) HasBudget(name string) bool {
	return name == "installation:"+strconv.FormatInt(a.installation, 10)
}

// paced waits for the call's budget, or returns why runfleet holds it:
// the call was not sent.
func (a *githubAPI) paced(ctx context.Context, op string) (release func(), err error) {
	if appCall(op) || a.budget == nil {
		return func() {}, nil
	}
	release, err = a.budget.Wait(ctx, opCost(op))
	if err != nil {
		a.g.w.stats.inc("github.held_by_budget." + op)
		a.g.w.tr.add("github %s held by runfleet's budget: %v", op, err)
	}
	return release, err
}

// limited is GitHub's answer to a call its secondary limit refuses, told
// to runfleet's budget as the adapter's pacer tells it.
func (a *githubAPI) limited(ctx context.Context, op string) error {
	w := a.g.w
	if appCall(op) || !a.g.limitOf(a.installation).admit(w.now(), opCost(op)) {
		return nil
	}
	w.stats.inc("github.secondary_refusals")
	w.violate("no secondary-limit refusal unless injected as a fault",
		"GitHub refused %s (installation %d): runfleet's budget (%d points a minute) let it past GitHub's limit (%d)", op, a.installation, w.cfg.BudgetPointsPerMinute, w.cfg.GitHubLimit)
	r := budget.Refusal{RetryAfter: penaltyFor, Secondary: true, Message: "You have exceeded a secondary rate limit"}
	if a.budget != nil {
		a.budget.Refuse(ctx, r)
	}
	return &github.RateLimitError{RetryAt: w.now().Add(penaltyFor), Secondary: true, Message: r.Message}
}

// heldCreate notes that the JIT registration of instance name, made by the
// task who, was held back by runfleet's budget or refused by GitHub's
// limit: nothing was made.
func (g *githubWorld) heldCreate(name, who string) {
	if g.heldJIT == nil {
		g.heldJIT = map[string]string{}
	}
	g.heldJIT[name] = who
}

// checkBudgetWait holds the engine to "waiting for GitHub's budget never
// uses up an attempt": the write that ends a create whose JIT call was
// held back (the same task's next write from creating) puts the instance
// back to pending_create with the attempt it claimed given back — not an
// error, not a replacement.
func (g *githubWorld) checkBudgetWait(ctx context.Context, st store.Store, from runner.Status, next *runner.Instance) {
	if !next.Status.Live() || next.Status.PendingDeletion() || next.Status == runner.StatusError || next.Status == runner.StatusDeleting {
		g.stopsWaiting(next.Name)
	}
	who, held := g.heldJIT[next.Name]
	switch {
	case !held:
		return
	case from == runner.StatusPendingCreate && next.Status == runner.StatusCreating:
		delete(g.heldJIT, next.Name) // a new claim: the wait ended unwritten
		return
	case from != runner.StatusCreating || who != g.w.sched.who():
		return
	}
	delete(g.heldJIT, next.Name)
	cur, err := st.GetInstance(ctx, next.Name)
	if err != nil {
		return
	}
	if next.Status != runner.StatusPendingCreate || next.CreateAttempt != cur.CreateAttempt-1 {
		g.w.violateAbout([]string{next.Name}, "waiting for GitHub's budget never uses up an attempt",
			"instance %s: its JIT registration was held back for GitHub's budget, and the create ended %s with attempt %d (claimed %d)",
			next.Name, next.Status, next.CreateAttempt, cur.CreateAttempt)
	}
}
