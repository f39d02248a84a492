package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/runner"
)

// githubAPI is the github.GitHub port of one runfleet process: GitHub's
// REST API as the production adapter (internal/github/rest) presents it,
// with GitHub's faults — 5xx before or after the effect, 429 with
// Retry-After, 404 for what is gone, 409 for a name taken, 422 for a busy
// runner, and busy:false for a runner that is running a job. Every call
// costs a little virtual time, during which other tasks run.
type githubAPI struct {
	g *githubWorld
	p *process
	// budget paces the installation's calls (github_limit.go); the
	// process's own, as each `runfleet serve` process has its own.
	budget *budget.Budget
	// installation is the App installation the calls authenticate as:
	// 1 for the App whose webhooks runfleet receives, 2, 3, … for extra
	// Apps (github_limit.go).
	installation int64
}

var _ github.GitHub = (*githubAPI)(nil)

// apiError is a GitHub answer the adapter passes on as a plain error.
type apiError struct {
	status int
	op     string
}

func (e *apiError) Error() string { return fmt.Sprintf("github: %s: HTTP %d", e.op, e.status) }

type ghFault int

const (
	ghOK ghFault = iota
	ghServerError
	ghRateLimited
	ghErrorAfterEffect
)

// call is the round trip of one request: it reaches GitHub (sent) unless
// the process was already gone, and its answer comes back after a latency.
// When the process dies meanwhile, the request may still have taken effect.
//
// Before it is sent, runfleet's budget may hold it (a *RateLimitError,
// nothing sent); GitHub's secondary limit may refuse it, as may the fault
// model (a 429 with Retry-After): either refusal is returned as the
// call's error, and runfleet's budget is told, as the adapter's pacer
// tells it.
func (a *githubAPI) call(ctx context.Context, op string, job int64) (ghFault, error) {
	w := a.g.w
	release, err := a.paced(ctx, op)
	if err != nil {
		return ghOK, err
	}
	defer release()
	if err := a.p.enter(ctx); err != nil {
		return ghOK, errNotSent
	}
	w.stats.inc("github.calls." + op)
	if w.cfg.Apps > 1 {
		w.stats.inc("github.calls_by_installation." + strconv.FormatInt(a.installation, 10))
	}
	a.g.charge(job, op)
	refused := a.limited(ctx, op)
	fault := ghOK
	if w.faultsOn && refused == nil {
		f := w.cfg.GitHub
		switch x := w.rng.Float64(); {
		case x < f.ServerError:
			fault = ghServerError
		case x < f.ServerError+f.RateLimited:
			refused = a.injectedLimit(ctx, op)
		case x < f.ServerError+f.RateLimited+f.ErrorAfterEffect:
			fault = ghErrorAfterEffect
		}
	}
	if err := a.p.sleep(ctx, between(w.rng, 50*time.Millisecond, 400*time.Millisecond)); err != nil {
		return fault, err
	}
	if refused != nil {
		return ghOK, refused
	}
	return fault, nil
}

// injectedLimit is the fault model's 429 with Retry-After.
func (a *githubAPI) injectedLimit(ctx context.Context, op string) error {
	w := a.g.w
	w.stats.inc("fault.github.429." + op)
	retry := between(w.rng, time.Second, time.Minute).Truncate(time.Second)
	w.tr.add("github %s -> 429 retry-after %s", op, retry)
	r := budget.Refusal{RetryAfter: retry, Secondary: true, Message: "You have exceeded a secondary rate limit"}
	if a.budget != nil && !appCall(op) {
		return a.budget.Refuse(ctx, r)
	}
	return &github.RateLimitError{RetryAt: w.now().Add(retry), Secondary: true, Message: r.Message}
}

// refuse turns a fault decided before the effect into GitHub's answer.
func (a *githubAPI) refuse(op string, fault ghFault) error {
	w := a.g.w
	if fault == ghServerError {
		w.stats.inc("fault.github.5xx." + op)
		w.tr.add("github %s -> 502", op)
		return &apiError{status: 502, op: op}
	}
	return nil
}

// afterEffect is the answer to a call that took effect: an error if GitHub
// chose to fail it anyway.
func (a *githubAPI) afterEffect(op string, fault ghFault) error {
	if fault != ghErrorAfterEffect {
		return nil
	}
	a.g.w.stats.inc("fault.github.5xx_after_effect." + op)
	a.g.w.tr.add("github %s took effect but answered 500", op)
	return &apiError{status: 500, op: op}
}

// died settles a call cut off by the process's death: the request may
// have reached GitHub.
func (a *githubAPI) died(err error, effect func()) error {
	if err == errKilled && a.g.w.rng.IntN(2) == 0 {
		effect()
	}
	return err
}

// GenerateJITConfig registers an ephemeral runner. Like the production
// adapter, a name held by an idle runner of ours (one GitHub registered
// although it answered an error) is cleared and the call retried once; a
// busy or foreign holder is a 409.
func (a *githubAPI) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	g, job := a.g, jobOfInstance(req.Name)
	fault, err := a.call(ctx, "generate_jit", job)
	var made *ghRunner
	register := func() error {
		if stale := g.registeredByName(req.Name); stale != nil {
			if stale.foreign || stale.busy() {
				return fmt.Errorf("%w: %q is held by runner %d", github.ErrRunnerNameTaken, req.Name, stale.ID)
			}
			// The adapter's list, remove and second POST.
			g.charge(job, "list_runners")
			g.charge(job, "remove_runner")
			g.charge(job, "generate_jit")
			g.w.stats.inc("github.jit_name_taken_cleared")
			g.deregister(stale)
		}
		made = g.register(req.Name, req.Owner.String(), req.Labels, false, true)
		return nil
	}
	if err != nil {
		return nil, a.died(err, func() { _ = register() })
	}
	if err := a.refuse("generate_jit", fault); err != nil {
		return nil, err
	}
	if err := register(); err != nil {
		g.w.tr.add("github generate_jit %s -> 409", req.Name)
		return nil, err
	}
	g.w.tr.add("github generate_jit %s -> runner %d", req.Name, made.ID)
	if err := a.afterEffect("generate_jit", fault); err != nil {
		return nil, err
	}
	return &github.JITConfig{RunnerID: made.ID, EncodedJITConfig: "jit-" + strconv.FormatInt(made.ID, 10)}, nil
}

// RemoveRunner deregisters a runner: by id when given (a removed id is a
// 404, whatever now holds its name), else by name. Busy is a 422.
func (a *githubAPI) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	g := a.g
	target := func() *ghRunner {
		if ref.ID != 0 {
			if r := g.byID[ref.ID]; r != nil && r.registered {
				return r
			}
			return nil
		}
		return g.registeredByName(ref.Name)
	}
	name := ref.Name
	if r := g.byID[ref.ID]; r != nil {
		name = r.Name
	}
	fault, err := a.call(ctx, "remove_runner", jobOfInstance(name))
	remove := func() error {
		r := target()
		switch {
		case r == nil:
			g.w.tr.add("github remove_runner %s (id %d) -> 404", ref.Name, ref.ID)
			return nil
		case r.foreign:
			g.w.violate("never touch a runner runfleet does not own", "runfleet removed runner %s (id %d), which it did not register", r.Name, r.ID)
		case r.busy():
			g.w.tr.add("github remove_runner %s (id %d) -> 422 busy (job %d)", r.Name, r.ID, r.job.ID)
			return fmt.Errorf("github: remove runner %q: %w", r.Name, github.ErrRunnerBusy)
		}
		g.deregister(r)
		g.w.tr.add("github remove_runner %s (id %d) -> 204", r.Name, r.ID)
		return nil
	}
	if err != nil {
		return a.died(err, func() { _ = remove() })
	}
	if err := a.refuse("remove_runner", fault); err != nil {
		return err
	}
	if err := remove(); err != nil {
		return err
	}
	return a.afterEffect("remove_runner", fault)
}

// ListRunners lists the owner's registrations, sometimes calling a busy
// runner idle.
func (a *githubAPI) ListRunners(ctx context.Context, owner github.Owner) ([]github.Runner, error) {
	g := a.g
	fault, err := a.call(ctx, "list_runners", 0)
	if err != nil {
		return nil, err
	}
	if err := a.refuse("list_runners", fault); err != nil {
		return nil, err
	}
	var out []github.Runner
	lies := 0
	for _, r := range g.runners {
		if !r.registered || r.Owner != owner.String() {
			continue
		}
		status := "offline"
		if r.online {
			status = "online"
		}
		busy := r.busy()
		if busy && g.w.faultsOn && chance(g.w.rng, g.w.cfg.GitHub.BusyLie) {
			busy = false
			lies++
			g.w.stats.inc("fault.github.busy_false_lie")
		}
		out = append(out, github.Runner{ID: r.ID, Name: r.Name, Status: status, Busy: busy, Labels: append([]string(nil), r.Labels...)})
	}
	g.w.tr.add("github list_runners %s -> %d runners (%d busy:false lies)", owner, len(out), lies)
	return out, a.afterEffect("list_runners", fault)
}

// RunnerDownloads offers one linux build. It answers within the caller's
// turn: the engine's download cache lets one caller list while the others
// wait on an in-memory channel (engine/downloads.go), which a task parked at a
// port call would never close.
func (a *githubAPI) RunnerDownloads(ctx context.Context, owner github.Owner) ([]github.RunnerDownload, error) {
	w := a.g.w
	if a.p.dead {
		return nil, errKilled
	}
	w.stats.inc("github.calls.runner_downloads")
	a.g.charge(0, "runner_downloads")
	if w.faultsOn && chance(w.rng, w.cfg.GitHub.ServerError) {
		return nil, a.refuse("runner_downloads", ghServerError)
	}
	return []github.RunnerDownload{{
		OS: "linux", Architecture: "x64", Filename: "actions-runner-linux-x64-2.330.0.tar.gz",
		DownloadURL: "https://github.com/actions/runner/releases/download/v2.330.0/actions-runner-linux-x64-2.330.0.tar.gz",
	}}, nil
}

// GetJob reads a job as the REST API shows it: a job handed to a runner
// that has not started it is still queued.
func (a *githubAPI) GetJob(ctx context.Context, ref github.JobRef) (*github.Job, error) {
	g := a.g
	fault, err := a.call(ctx, "get_job", ref.ID)
	if err != nil {
		return nil, err
	}
	if err := a.refuse("get_job", fault); err != nil {
		return nil, err
	}
	j := g.jobByID[ref.ID]
	if j == nil {
		g.w.tr.add("github get_job %d -> 404", ref.ID)
		return nil, fmt.Errorf("github: job %d: %w", ref.ID, github.ErrJobNotFound)
	}
	out := &github.Job{ID: j.ID, RunAttempt: j.RunAttempt, Status: j.Status, Conclusion: j.Conclusion}
	if j.runner != nil {
		out.RunnerName = j.runner.Name
	}
	g.w.tr.add("github get_job %d -> %s %s", ref.ID, out.Status, out.Conclusion)
	return out, nil
}

// jobOfInstance reads the job id out of an instance (and runner) name
// "runfleet-<pool>-<job id>-<run attempt>[-r<n>]"; 0 for a warm runner or
// a name of another shape.
func jobOfInstance(name string) int64 {
	rest, ok := strings.CutPrefix(name, runner.NamePrefix)
	if !ok {
		return 0
	}
	parts := strings.Split(rest, "-")
	if n := len(parts); n > 0 && strings.HasPrefix(parts[n-1], "r") {
		if _, err := strconv.Atoi(parts[n-1][1:]); err == nil {
			parts = parts[:n-1]
		}
	}
	if len(parts) < 3 {
		return 0
	}
	id, err := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	if err != nil {
		return 0
	}
	return id
}
