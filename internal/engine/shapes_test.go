package engine_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// refusals is an engine.Observer that counts refused jobs by pool and
// reason.
type refusals struct {
	engine.NopObserver
	mu    sync.Mutex
	count map[string]int
}

func (r *refusals) JobRefused(pool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[pool+"/"+reason]++
}

func (r *refusals) get(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[key]
}

// shapedWorld is the default world whose pool allows shapes up to 16 vCPUs
// and 64 GiB from c7g and m7g, with one image alias; observer hears it.
func shapedWorld(t *testing.T, observer engine.Observer) *enginetest.World {
	return enginetest.NewWorld(t, enginetest.Options{
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.Shapes = &runner.ShapePolicy{
				Families: []string{"c7g", "m7g"}, MaxCPU: 16, MaxMemoryGiB: 64, MaxDiskGiB: 200,
				Images: map[string]string{"ubuntu": "ami-0123456789abcdef0"},
			}
		}),
		Engine: func(o *engine.Options) { o.Observer = observer },
	})
}

func shapedEvent(action runner.JobAction, id int64, shape ...string) runner.JobEvent {
	ev := enginetest.Event(action, id, "")
	ev.Labels = append(ev.Labels, shape...)
	return ev
}

// A job asking beyond its pool's policy gets no machine and a clear
// reason: the outcome, one WARN line naming pool, job and reason, the
// observer's count — and nothing in the ledger, the queue or the provider,
// however often GitHub delivers it.
func TestJobBeyondPolicyGetsNoMachine(t *testing.T) {
	seen := &refusals{}
	w := shapedWorld(t, seen)
	ctx := context.Background()
	const id = 31_001
	for delivery := 1; delivery <= 2; delivery++ {
		out := w.Deliver(shapedEvent(runner.ActionQueued, id, "runfleet/cpu=64"))
		if out.Result != engine.ResultRefused || out.Reason != runner.RefusedCPUOverLimit || out.Pool != enginetest.Pool || out.Instance != "" {
			t.Fatalf("delivery %d: outcome %+v; want %s in pool %s, no instance", delivery, out, engine.ResultRefused, enginetest.Pool)
		}
	}
	if got := seen.get(enginetest.Pool + "/" + runner.RefusedCPUOverLimit); got != 2 {
		t.Errorf("observer heard %d cpu_over_limit refusals, want 2 (one per delivery)", got)
	}
	lines := w.Logs.Lines(t, map[string]any{"level": "WARN", "pool": enginetest.Pool, "job_id": id, "reason": runner.RefusedCPUOverLimit})
	if len(lines) != 2 {
		t.Fatalf("WARN lines naming pool, job and reason: %d, want 2; log:\n%s", len(lines), w.Logs.Tail(10))
	}
	if detail, _ := lines[0]["detail"].(string); detail != "asked for 64 vCPUs; the pool allows at most 16" {
		t.Errorf("detail = %q", detail)
	}
	if _, err := w.Store.GetJob(ctx, runner.JobKey(id, 1)); !isJobNotFound(err) {
		t.Errorf("the ledger has the refused job (%v); want no record", err)
	}
	w.StartWorkers(1)
	if rep, err := w.Engine.Reconcile(ctx); err != nil || rep.JobsServed != 0 {
		t.Fatalf("reconcile served %d jobs (%v); want none", rep.JobsServed, err)
	}
	w.Drain()
	if live, calls := w.Live(), w.Recorder.Calls(); len(live) != 0 || len(calls) != 0 {
		t.Fatalf("live instances %d, provider calls %q; want none", len(live), calls)
	}
}

// Every refusal reason ends the same way: refused at intake, nothing made.
func TestEveryRefusalReasonMakesNothing(t *testing.T) {
	seen := &refusals{}
	w := shapedWorld(t, seen)
	cases := map[string][]string{
		runner.RefusedMalformedLabel:   {"runfleet/cpu=lots"},
		runner.RefusedFamilyNotAllowed: {"runfleet/family=p5"},
		runner.RefusedMemoryOverLimit:  {"runfleet/memory=512"},
		runner.RefusedDiskOverLimit:    {"runfleet/disk=1000"},
		runner.RefusedSpotNotAllowed:   {"runfleet/spot=true"},
		runner.RefusedUnknownImage:     {"runfleet/image=windows"},
	}
	id := int64(32_000)
	for reason, labels := range cases {
		id++
		if out := w.Deliver(shapedEvent(runner.ActionQueued, id, labels...)); out.Result != engine.ResultRefused {
			t.Errorf("%q: outcome %+v, want refused", labels, out)
		}
		if got := seen.get(enginetest.Pool + "/" + reason); got != 1 {
			t.Errorf("%q: %d refusals for %s, want 1", labels, got, reason)
		}
	}
	if live := w.Live(); len(live) != 0 {
		t.Fatalf("live instances: %d, want none", len(live))
	}
}

// A pool without a policy refuses shape labels rather than launch its own
// machine for a job that asked for another.
func TestPoolWithoutPolicyRefusesShapedJobs(t *testing.T) {
	seen := &refusals{}
	w := enginetest.NewWorld(t, enginetest.Options{Engine: func(o *engine.Options) { o.Observer = engine.Observers(seen, engine.NopObserver{}) }})
	out := w.Deliver(shapedEvent(runner.ActionQueued, 33_001, "runfleet/cpu=2"))
	if out.Result != engine.ResultRefused || seen.get(enginetest.Pool+"/"+runner.RefusedShapesNotAllowed) != 1 {
		t.Fatalf("outcome %+v, refusals %v; want shapes_not_allowed, heard through Observers", out, seen.count)
	}
}

// A job waiting for approval is refused too: recorded waiting, it would be
// opened by the reconciler and served.
func TestWaitingJobBeyondPolicyIsNotRecorded(t *testing.T) {
	w := shapedWorld(t, nil)
	const id = 34_001
	if out := w.Deliver(shapedEvent(runner.ActionWaiting, id, "runfleet/family=p5")); out.Result != engine.ResultRefused {
		t.Fatalf("waiting: outcome %+v, want refused", out)
	}
	if _, err := w.Store.GetJob(context.Background(), runner.JobKey(id, 1)); !isJobNotFound(err) {
		t.Fatalf("the ledger has the refused waiting job (%v)", err)
	}
}

// A granted shape reaches GitHub (the runner carries the job's shape
// labels, or GitHub would never give it the job) and the provider.
func TestGrantedShapeReachesRunnerAndProvider(t *testing.T) {
	w := shapedWorld(t, nil)
	w.StartWorkers(1)
	const id = 35_001
	shape := []string{"runfleet/cpu=4", "RunFleet/Family=m7g", "runfleet/image=ubuntu", "runfleet/spot=false", "runfleet/disk=50"}
	out := w.Deliver(shapedEvent(runner.ActionQueued, id, shape...))
	if out.Result != engine.ResultCreated {
		t.Fatalf("outcome %+v, want %s", out, engine.ResultCreated)
	}
	name := enginetest.InstanceName(id)
	inst := w.WaitStatus(name, runner.StatusRunning)
	for _, l := range shape {
		if !slices.Contains(inst.Labels, l) {
			t.Errorf("instance labels %q lack the job's %q", inst.Labels, l)
		}
	}
	var registered []string
	for _, r := range w.GitHub.Runners() {
		if r.Name == name {
			registered = r.Labels
		}
	}
	for _, l := range append(enginetest.Labels(), shape...) {
		if !slices.ContainsFunc(registered, func(have string) bool { return equalFold(have, l) }) {
			t.Errorf("the JIT runner's labels %q do not cover the job's %q", registered, l)
		}
	}
	reqs := w.Recorder.Requests(name)
	if len(reqs) != 1 || reqs[0].Shape == nil {
		t.Fatalf("create requests %+v; want one with a shape", reqs)
	}
	want := providers.Shape{MinCPU: 4, MaxCPU: 16, MaxMemoryGiB: 64, Families: []string{"m7g"}, DiskGiB: 50, Market: providers.MarketOnDemand, Image: "ami-0123456789abcdef0"}
	if !reflect.DeepEqual(*reqs[0].Shape, want) {
		t.Errorf("shape = %+v, want %+v", *reqs[0].Shape, want)
	}

	plain := int64(35_002)
	w.Deliver(enginetest.Event(runner.ActionQueued, plain, ""))
	w.WaitStatus(enginetest.InstanceName(plain), runner.StatusRunning)
	if reqs := w.Recorder.Requests(enginetest.InstanceName(plain)); len(reqs) != 1 || reqs[0].Shape != nil {
		t.Errorf("an unshaped job's create: %+v; want no shape", reqs)
	}
}

// A spare instance goes only to a job of the same shape: an unshaped job
// that started on a shaped job's runner leaves its own (unshaped) instance
// spare, and the shaped job gets a machine of its own shape instead.
func TestSpareGoesOnlyToAJobOfTheSameShape(t *testing.T) {
	w := shapedWorld(t, nil)
	ctx := context.Background()
	w.StartWorkers(2)
	plain, shaped := int64(36_001), int64(36_002)
	runnerPlain, runnerShaped := enginetest.InstanceName(plain), enginetest.InstanceName(shaped)
	w.Deliver(enginetest.Event(runner.ActionQueued, plain, ""))
	w.Deliver(shapedEvent(runner.ActionQueued, shaped, "runfleet/cpu=8"))
	w.WaitStatus(runnerPlain, runner.StatusRunning)
	w.WaitStatus(runnerShaped, runner.StatusRunning)

	// The shaped runner's labels cover the plain job's: GitHub may give it.
	w.GitHub.StartJob(plain, runnerShaped)
	w.Deliver(enginetest.Event(runner.ActionInProgress, plain, runnerShaped))
	if job := w.Job(shaped); job.Instance == runnerPlain {
		t.Fatalf("the shaped job was handed the plain job's spare %s", runnerPlain)
	}
	// The reconciler serves the shaped job once its backoff (the world's
	// 20 ms) is over.
	w.WaitFor("the shaped job served anew", func() bool {
		if _, err := w.Engine.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		return w.Job(shaped).Made == 2
	})
	job := w.Job(shaped)
	inst := w.WaitStatus(job.Instance, runner.StatusRunning)
	if !slices.Contains(inst.Labels, "runfleet/cpu=8") || job.Made != 2 {
		t.Fatalf("shaped job's new instance %s labels %q (made %d); want its shape, the second made", inst.Name, inst.Labels, job.Made)
	}
	if reqs := w.Recorder.Requests(inst.Name); len(reqs) != 1 || reqs[0].Shape == nil || reqs[0].Shape.MinCPU != 8 {
		t.Fatalf("create of the replacement: %+v; want MinCPU 8", reqs)
	}
}

func isJobNotFound(err error) bool { return errors.Is(err, store.ErrJobNotFound) }

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// A job recorded under a wider policy, whose pool's policy is narrowed
// before its machine is made (a config change and a restart): its create
// asks no provider for anything, and the job is parked rather than refused
// again on every reconcile pass.
func TestPolicyNarrowedAfterAdmissionMakesNothing(t *testing.T) {
	seen := &refusals{}
	w := shapedWorld(t, seen)
	ctx := context.Background()
	const id = 37_001
	if out := w.Deliver(shapedEvent(runner.ActionQueued, id, "runfleet/cpu=8")); out.Result != engine.ResultCreated {
		t.Fatalf("outcome %+v, want the instance admitted", out)
	}
	pool, _ := w.Engine.Pools().Get(enginetest.Pool)
	pool.Shapes.MaxCPU = 4 // the pools share the policy: the config as the restart reads it
	w.Restart()
	w.StartWorkers(1)
	name := enginetest.InstanceName(id)
	w.WaitStatus(name, runner.StatusDeleted)
	w.WaitFor("the refused job parked", func() bool {
		return w.Job(id).NextAttemptAt.After(time.Now().Add(5 * time.Minute))
	})
	w.Drain()
	if reqs := w.Recorder.Requests(name); len(reqs) != 0 {
		t.Fatalf("provider asked to create %d times for a shape the pool now refuses", len(reqs))
	}
	before := seen.get(enginetest.Pool + "/" + runner.RefusedCPUOverLimit)
	if before < 1 {
		t.Fatalf("refusals heard: %d, want at least 1", before)
	}
	if rep, err := w.Engine.Reconcile(ctx); err != nil || rep.JobsServed != 0 {
		t.Fatalf("reconcile served %d jobs (%v); the parked job waits", rep.JobsServed, err)
	}
	if after := seen.get(enginetest.Pool + "/" + runner.RefusedCPUOverLimit); after != before {
		t.Errorf("refusals %d after a reconcile pass, want still %d", after, before)
	}
	if job := w.Job(id); job.Status != runner.JobOpen || job.Made != 1 {
		t.Errorf("job %s made %d; want open (GitHub still has it queued) with 1 made", job.Status, job.Made)
	}
}
