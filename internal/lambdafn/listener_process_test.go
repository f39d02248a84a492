package lambdafn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/lambdafn/listen"
	"github.com/runfleet/runfleet/internal/lambdafn/runtimeapi"
	"github.com/runfleet/runfleet/internal/runner"
)

// The listener's bootstrap, built as deployed and run as a process under a
// Lambda Runtime API with the environment template.yaml gives it and its
// default margin and lease: one scheduled invocation reads the job GitHub
// assigned to the scale set, admits it to the ledger with its create on
// the work queue, and returns before its deadline leaving the session for
// the next tick.
func TestListenerBootstrapProcessAdmitsAScaleSetJob(t *testing.T) {
	bins := buildBootstraps(t, "listener")
	gh := newScaleSetGitHub(t)
	ls := newLocalStack(t, gh.config("process-test"), listenerToken)
	env := templateEnv(t, "ListenerFunction", ls.deploy)
	for name, value := range ls.lambdaEnv("ListenerFunction") {
		env[name] = value
	}
	// 15 s stands for the template's 75: the function listens until
	// listen.DefaultMargin (10 s) before its deadline.
	api := runtimeapi.NewServer(t, runtimeapi.Options{FunctionName: "runfleet-ListenerFunction", Timeout: 15 * time.Second})
	fn := &function{name: "ListenerFunction", api: api, proc: api.Start(t, runtimeapi.Bootstrap{Path: bins["listener"], Env: env})}

	rr := gh.actions.QueueJob(gh.setID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{scaleSetName}})
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	started := time.Now()
	var rep listen.Report
	fn.invoke(t, tick, &rep)
	// The function's own account of how long it listened, not this
	// machine's speed: it stops before the deadline it was given.
	if len(rep.Pools) != 1 || rep.ListenedMs == 0 || rep.ListenedMs >= (15*time.Second).Milliseconds() {
		t.Fatalf("report %+v after %s: want the pool listened for, and stopped before the deadline\n%s", rep, time.Since(started), fn.proc.Output())
	}

	id := runner.ScaleSetJobID(rr)
	if job, err := ls.store.GetJob(context.Background(), runner.JobKey(id, 1)); err != nil || job.Pool != scalePool {
		t.Fatalf("the assigned job in the ledger: %+v, %v\n%s", job, err, fn.proc.Output())
	}
	name := runner.InstanceName(scalePool, id, 1)
	msgs := ls.receive(t, 5*time.Second)
	if len(msgs) != 1 || !strings.Contains(*msgs[0].Body, name) {
		t.Fatalf("work queue after the invocation: %d messages, want the create of %s", len(msgs), name)
	}
	if n := gh.actions.Count(scalesettest.OpDeleteSession); n != 0 {
		t.Errorf("%d session deletes, want the session left for the next invocation", n)
	}
	if n := gh.actions.Unacknowledged(gh.setID); n != 0 {
		t.Errorf("%d messages never acknowledged", n)
	}
}
