package lambdafn_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn/runtimeapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// killedWorkerTimeout is the worker function's timeout in this test: short, so
// the test waits seconds, not the deployed 300 s.
const killedWorkerTimeout = 10 * time.Second

// Issue #32: a worker invocation killed at its timeout — the process
// killed, as Lambda ends a sandbox, not a handler that returns — leaves
// its instance in creating under a claim that names the invocation and
// ends at its deadline. The reconciler function's next tick takes it
// over at once (the bound the docs state: the worker's timeout plus one
// schedule period), not after CreatingTimeout + takeover grace: the
// machine by name and the runner are removed, the create retried, and a
// new worker makes the one machine.
func TestWorkerKilledAtItsTimeoutFreesItsSlotAtTheNextReconcile(t *testing.T) {
	bins := buildBootstraps(t, "webhook", "worker", "reconciler")
	providerBin, err := externaltest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	statePath := filepath.Join(scratch, "machines.json")
	// Every create and delete hangs: the invocation is inside its
	// provider call, then its clean-up, when it is killed.
	hanging := externaltest.Config{StateFile: statePath, Hang: []string{"CreateInstance", "DeleteInstance"}}
	withLayer, without := layerDirs(t, providerBin, hanging)
	const token = "ghp_timeouttest0123456789"
	gh := fakeGitHub(t, token)
	ls := newLocalStack(t, processConfig(gh.URL()), token)
	intake := ls.startFunction(t, "WebhookFunction", bins["webhook"], without)
	reconciler := ls.startFunction(t, "ReconcilerFunction", bins["reconciler"], withLayer)
	worker := ls.startFunctionWithTimeout(t, "WorkerFunction", bins["worker"], withLayer, killedWorkerTimeout)

	name := runner.InstanceName(linuxPool, 7000032001, 1)
	deliverToProcess(t, intake, jobPayload(t, runner.ActionQueued, 7000032001, ""), webhook.StatusProcessed)
	msgs := ls.receive(t, 5*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("work queue: %d messages, want the create", len(msgs))
	}
	payload, err := json.Marshal(sqsEventOf(t, msgs))
	if err != nil {
		t.Fatal(err)
	}
	invoked := time.Now()
	returned := make(chan error, 1)
	go func() {
		_, _, err := worker.api.Invoke(context.Background(), payload)
		returned <- err
	}()
	// The sandbox is killed inside its provider call, before the worker's
	// own clean-up a few seconds before the deadline (which a kill at the
	// timeout itself would find done): what a kill at the timeout leaves
	// when the clean-up overruns, or a sandbox that dies sooner.
	time.Sleep(time.Until(invoked.Add(killedWorkerTimeout - 5*time.Second)))
	if err := worker.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	<-worker.proc.Exited()
	if err := <-returned; err == nil {
		t.Fatalf("the killed invocation answered\n%s", worker.proc.Output())
	}
	held, err := ls.store.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if held.Status != runner.StatusCreating || !strings.Contains(held.Claim, "@lambda-") {
		t.Fatalf("after the kill: %s claimed %q, want creating under the invocation's claim\nworker output:\n%s", held.Status, held.Claim, worker.proc.Output())
	}
	// The claim ends at the invocation's deadline (its own, the function's
	// timeout less the report margin, plus the clean-up grace): never past
	// the function's timeout.
	deadline := invoked.Add(killedWorkerTimeout)
	if held.ClaimUntil.IsZero() || held.ClaimUntil.After(deadline) {
		t.Fatalf("claim until %s, want by the invocation's timeout %s", held.ClaimUntil, deadline)
	}

	// The provider answers again. A reconciler tick before the claim's
	// end leaves it: the invocation may still be at work, for all it knows.
	if err := (externaltest.Config{StateFile: statePath}).Write(filepath.Join(withLayer, "opt", "garm", "garm-provider-fake.json")); err != nil {
		t.Fatal(err)
	}
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	var report engine.ReconcileReport
	if time.Now().Before(held.ClaimUntil) {
		reconciler.invoke(t, tick, &report)
		if inst, err := ls.store.GetInstance(context.Background(), name); err != nil || time.Now().Before(held.ClaimUntil) && inst.Status != runner.StatusCreating {
			t.Fatalf("taken over before its claim ended: %+v, %v", inst, err)
		}
	}
	// The next tick after it: taken over at once.
	time.Sleep(time.Until(held.ClaimUntil))
	reconciler.invoke(t, tick, &report)
	after, err := ls.store.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != runner.StatusPendingCreate {
		t.Fatalf("after the reconciler's tick: %s, want pending_create (the slot freed, the create retried)\nreconciler output:\n%s", after.Status, reconciler.proc.Output())
	}
	if report.StuckCreating != 0 || !strings.Contains(reconciler.proc.Output(), "work left by stopped invocations taken over") {
		t.Fatalf("not taken over by its claim (report %+v)\nreconciler output:\n%s", report, reconciler.proc.Output())
	}
	// A new sandbox makes the one machine.
	fresh := ls.startFunction(t, "WorkerFunction", bins["worker"], withLayer)
	ls.drainUntil(t, fresh, name+" running", func() bool {
		inst, err := ls.store.GetInstance(context.Background(), name)
		return err == nil && inst.Status == runner.StatusRunning
	})
	state, err := externaltest.ReadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(state.Machines); n != 1 {
		t.Fatalf("%d machines, want 1", n)
	}
}

// startFunctionWithTimeout is startFunction with the function's timeout
// (the invocations' deadline) set.
func (ls *localStack) startFunctionWithTimeout(t testing.TB, logicalID, bin, dir string, timeout time.Duration) *function {
	t.Helper()
	env := templateEnv(t, logicalID, ls.deploy)
	for name, value := range ls.lambdaEnv(logicalID) {
		env[name] = value
	}
	api := runtimeapi.NewServer(t, runtimeapi.Options{FunctionName: "runfleet-" + logicalID, Timeout: timeout})
	proc := api.Start(t, runtimeapi.Bootstrap{Path: bin, Dir: dir, Env: env})
	return &function{name: logicalID, api: api, proc: proc}
}
