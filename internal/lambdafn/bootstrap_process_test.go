package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/cloudbase/garm-provider-common/params"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// The five bootstraps, built as deployed and run as processes under a
// Lambda Runtime API with exactly the environment template.yaml gives each,
// against DynamoDB Local, moto and the fake GitHub, carry jobs through
// their whole lives. The pool's GARM provider lives in a layer-like
// directory only the worker and the reconciler see (as template.yaml gives
// ProviderLayerArn only to them): the webhook, operator-delete and
// metadata functions start and serve without it, the worker creates and
// deletes through it.
func TestBootstrapProcessesRunJobsThroughTheirLives(t *testing.T) {
	bins := buildBootstraps(t, "webhook", "worker", "forcedelete", "reconciler", "metadata")
	providerBin, err := externaltest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	statePath, recordPath := filepath.Join(scratch, "machines.json"), filepath.Join(scratch, "calls.jsonl")
	withLayer, without := layerDirs(t, providerBin, externaltest.Config{StateFile: statePath, RecordFile: recordPath})
	if _, err := os.Stat(filepath.Join(without, "opt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the functions without the layer can see opt/: %v", err)
	}
	const token = "ghp_processtest0123456789"
	gh := fakeGitHub(t, token)
	ls := newLocalStack(t, processConfig(gh.URL()), token)

	intake := ls.startFunction(t, "WebhookFunction", bins["webhook"], without)
	forceDelete := ls.startFunction(t, "ForceDeleteFunction", bins["forcedelete"], without)
	meta := ls.startFunction(t, "MetadataFunction", bins["metadata"], without)
	worker := ls.startFunction(t, "WorkerFunction", bins["worker"], withLayer)
	reconciler := ls.startFunction(t, "ReconcilerFunction", bins["reconciler"], withLayer)

	machines := func() map[string]bool {
		state, err := externaltest.ReadState(statePath)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range state.Machines {
			names[m.Instance.Name] = true
		}
		return names
	}
	status := func(name string, want runner.Status) func() bool {
		return func() bool {
			inst, err := ls.store.GetInstance(context.Background(), name)
			return err == nil && inst.Status == want
		}
	}

	// A queued job: the webhook admits it and sends the create; the worker,
	// handed the very message SQS holds, creates the machine through the
	// layer's provider and registers its runner with GitHub.
	first := runner.InstanceName(linuxPool, 7000009001, 1)
	deliverToProcess(t, intake, jobPayload(t, runner.ActionQueued, 7000009001, ""), webhook.StatusProcessed)
	msgs := ls.receive(t, 5*time.Second)
	if len(msgs) != 1 || !strings.Contains(*msgs[0].Body, first) {
		t.Fatalf("work queue after the queued webhook: %d messages, want the create of %s", len(msgs), first)
	}
	if resp := ls.work(t, worker, msgs); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("worker failed the create: %+v\n%s", resp, worker.proc.Output())
	}
	if !status(first, runner.StatusRunning)() || !machines()[first] {
		t.Fatalf("after the worker: %s running %t, machine %t", first, status(first, runner.StatusRunning)(), machines()[first])
	}
	if _, ok := gh.RunnerByName(first); !ok {
		t.Fatalf("GitHub has no runner %s", first)
	}
	// Its GitHub calls spent the token's budget in the table every
	// function shares, not one of its own.
	if b, err := ls.store.GetBudget(context.Background(), "token"); err != nil || b.Version == 0 || len(b.State) == 0 {
		t.Fatalf("the token's shared budget after the worker's calls: %+v, %v", b, err)
	}

	// The machine boots: the metadata function hands it its credentials
	// for the token the worker minted, and takes its status callback.
	boot := bootstrapParams(t, recordPath, first)
	if resp := callMetadataProcess(t, meta, http.MethodGet, boot.MetadataURL+"/credentials/runner", boot.InstanceToken, ""); resp.StatusCode != http.StatusOK || resp.Body == "" {
		t.Fatalf("GET credentials/runner = %d %q", resp.StatusCode, resp.Body)
	}
	idle := `{"status": "idle", "message": "runner started"}`
	if resp := callMetadataProcess(t, meta, http.MethodPost, boot.CallbackURL+"/status", boot.InstanceToken, idle); resp.StatusCode != http.StatusOK {
		t.Fatalf("idle callback = %d %q", resp.StatusCode, resp.Body)
	}
	if inst, err := ls.store.GetInstance(context.Background(), first); err != nil || inst.RunnerStatus != runner.RunnerIdle {
		t.Fatalf("after the idle callback: %+v, %v", inst, err)
	}

	// The job runs and completes; the worker deletes the machine and the
	// runner.
	deliverToProcess(t, intake, jobPayload(t, runner.ActionInProgress, 7000009001, first), webhook.StatusProcessed)
	deliverToProcess(t, intake, jobPayload(t, runner.ActionCompleted, 7000009001, first), webhook.StatusProcessed)
	ls.drainUntil(t, worker, first+" deleted", status(first, runner.StatusDeleted))
	if machines()[first] {
		t.Fatalf("machine %s is still there after its delete", first)
	}
	if _, ok := gh.RunnerByName(first); ok {
		t.Fatalf("GitHub still has runner %s", first)
	}

	// An operator's delete: recorded by the forcedelete function, which
	// has no provider, and carried out by the worker.
	second := runner.InstanceName(linuxPool, 7000009002, 1)
	deliverToProcess(t, intake, jobPayload(t, runner.ActionQueued, 7000009002, ""), webhook.StatusProcessed)
	ls.drainUntil(t, worker, second+" running", status(second, runner.StatusRunning))
	var result work.ForceDeleteResult
	forceDelete.invoke(t, work.ForceDeleteRequest{Name: second, Force: true}, &result)
	if !result.OK || result.Instance == nil || result.Instance.Name != second {
		t.Fatalf("force delete result %+v", result)
	}
	ls.drainUntil(t, worker, second+" deleted", status(second, runner.StatusDeleted))
	if machines()[second] {
		t.Fatalf("machine %s is still there after the operator's delete", second)
	}

	// A create whose message was lost: the scheduled reconciler re-sends
	// it and the worker creates the machine.
	third := admitLostCreate(t, ls.store, 7000009003)
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	var report engine.ReconcileReport
	reconciler.invoke(t, tick, &report)
	if report.CreatesResent != 1 {
		t.Fatalf("reconcile report %+v, want the lost create re-sent", report)
	}
	ls.drainUntil(t, worker, third+" running", status(third, runner.StatusRunning))
	if !machines()[third] {
		t.Fatalf("no machine for %s after the re-sent create", third)
	}

	// Every function served on the process it started with, and none of
	// them logged an error: the ones without the layer never missed it.
	for _, fn := range []*function{intake, forceDelete, meta, worker, reconciler} {
		select {
		case <-fn.proc.Exited():
			t.Errorf("%s exited: %v", fn.name, fn.proc.ExitErr())
		default:
		}
		if out := fn.proc.Output(); strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("%s logged an error:\n%s", fn.name, out)
		}
	}
}

// A function whose environment is incomplete reports it through the
// Runtime API's /init/error as an EnvError naming the missing variable,
// and exits before asking for an invocation.
func TestBootstrapWithABrokenEnvironmentReportsAnInitError(t *testing.T) {
	bins := buildBootstraps(t, "webhook", "worker")
	ls := newLocalStack(t, processConfig("https://github.invalid/"), "unused")
	for logicalID, bin := range map[string]string{"WebhookFunction": bins["webhook"], "WorkerFunction": bins["worker"]} {
		env := templateEnv(t, logicalID, ls.deploy)
		for name, value := range ls.lambdaEnv(logicalID) {
			env[name] = value
		}
		delete(env, lambdafn.EnvTable)
		fn := ls.startWithEnv(t, logicalID, bin, "", env)
		select {
		case <-fn.proc.Exited():
		case <-time.After(time.Minute):
			t.Fatalf("%s with no %s did not exit\n%s", logicalID, lambdafn.EnvTable, fn.proc.Output())
		}
		initErr, ok := fn.api.InitError()
		if !ok {
			t.Fatalf("%s exited (%v) without reporting an init error\n%s", logicalID, fn.proc.ExitErr(), fn.proc.Output())
		}
		if initErr.Type != lambdafn.InitErrorType || initErr.HeaderType != lambdafn.InitErrorHeaderType || !strings.Contains(initErr.Message, lambdafn.EnvTable) {
			t.Errorf("%s init error %+v, want %s (%s) naming %s", logicalID, initErr, lambdafn.InitErrorType, lambdafn.InitErrorHeaderType, lambdafn.EnvTable)
		}
		if _, _, err := fn.api.Invoke(context.Background(), []byte(`{}`)); err == nil {
			t.Errorf("%s served an invocation after its init error", logicalID)
		}
		if !strings.Contains(fn.proc.Output(), `"level":"ERROR"`) {
			t.Errorf("%s logged no error line for its init error:\n%s", logicalID, fn.proc.Output())
		}
	}
}

// A worker that cannot build its app (here: its config parameter does not
// exist) fails no invocation: every record of the batch comes back as a
// batch item failure, hidden for a short backoff, not the queue's 30
// minutes. The reconciler's failed start is a StartError.
func TestBootstrapThatCannotStartRetriesTheBatchSoon(t *testing.T) {
	bins := buildBootstraps(t, "worker", "reconciler")
	ls := newLocalStack(t, processConfig("https://github.invalid/"), "unused")
	ls.deploy.refs["ConfigParameter"] = "/runfleet-process-test/no-such-parameter"
	worker := ls.startFunction(t, "WorkerFunction", bins["worker"], "")
	reconciler := ls.startFunction(t, "ReconcilerFunction", bins["reconciler"], "")

	sent := map[string]bool{}
	for i := range 3 {
		sent[sendRaw(t, ls, fmt.Sprintf(`{"kind":"create","instance":"runfleet-linux-x64-%d-1"}`, 7000009100+i))] = true
	}
	var msgs = ls.receive(t, 5*time.Second)
	for len(msgs) < len(sent) {
		more := ls.receive(t, time.Second)
		if len(more) == 0 {
			t.Fatalf("received %d of %d messages", len(msgs), len(sent))
		}
		msgs = append(msgs, more...)
	}
	resp := ls.work(t, worker, msgs)
	if len(resp.BatchItemFailures) != len(sent) {
		t.Fatalf("worker that cannot start reported %+v, want all %d records failed", resp, len(sent))
	}
	// The queue hides a received record for 1800 s; only the worker's
	// shortened visibility can bring it back within this wait.
	back := map[string]bool{}
	deadline := time.Now().Add(45 * time.Second)
	for len(back) < len(sent) && time.Now().Before(deadline) {
		for _, m := range ls.receive(t, 5*time.Second) {
			back[*m.MessageId] = true
		}
	}
	for id := range sent {
		if !back[id] {
			t.Errorf("record %s did not come back after the worker's short backoff", id)
		}
	}

	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	_, fnErr := reconciler.invokeRaw(t, tick)
	if fnErr == nil || fnErr.Type != "StartError" || !strings.Contains(fnErr.Message, "no-such-parameter") {
		t.Fatalf("reconciler that cannot start: %+v, want a StartError naming the parameter", fnErr)
	}
}

// deliverToProcess sends body as GitHub's signed delivery through a
// Function URL event and checks the reply's status.
func deliverToProcess(t testing.TB, intake *function, body []byte, want string) webhook.Reply {
	t.Helper()
	var resp events.LambdaFunctionURLResponse
	intake.invoke(t, functionURLEvent(t, body), &resp)
	var reply webhook.Reply
	mustUnmarshal(t, []byte(resp.Body), &reply)
	if resp.StatusCode != http.StatusOK || reply.Status != want {
		t.Fatalf("webhook answered %d %+v, want 200 %s\n%s", resp.StatusCode, reply, want, intake.proc.Output())
	}
	return reply
}

// callMetadataProcess makes a booting machine's request to url (the
// metadata function's URL and a path) as the Function URL event Lambda
// would hand the metadata function.
func callMetadataProcess(t testing.TB, meta *function, method, url, token, body string) events.LambdaFunctionURLResponse {
	t.Helper()
	var ev events.LambdaFunctionURLRequest
	mustUnmarshal(t, readTestdata(t, "metadata-function-url-event.json"), &ev)
	path, query, _ := strings.Cut(strings.TrimPrefix(url, strings.TrimSuffix(metadataFunctionURL, "/")), "?")
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RawQueryString = path, path, query
	ev.RequestContext.HTTP.Method = method
	ev.Headers["authorization"] = "Bearer " + token
	if body != "" {
		ev.Headers["content-type"] = "application/json"
		ev.Body = body
	}
	var resp events.LambdaFunctionURLResponse
	meta.invoke(t, ev, &resp)
	resp.Body = decodeBody(t, resp)
	return resp
}

// bootstrapParams are what the worker gave the provider to create
// instance with: the fake provider records each call's stdin.
func bootstrapParams(t testing.TB, recordPath, instance string) params.BootstrapInstance {
	t.Helper()
	records, err := externaltest.ReadRecords(recordPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		var p params.BootstrapInstance
		if r.Command == string(common.CreateInstanceCommand) && json.Unmarshal([]byte(r.Stdin), &p) == nil && p.Name == instance {
			if p.InstanceToken == "" || !strings.HasPrefix(p.MetadataURL, metadataFunctionURL) {
				t.Fatalf("create of %s: token %t, metadata URL %q; want runner bootstrap through %s", instance, p.InstanceToken != "", p.MetadataURL, metadataFunctionURL)
			}
			return p
		}
	}
	t.Fatalf("the provider got no CreateInstance for %s", instance)
	return params.BootstrapInstance{}
}

// admitLostCreate records a job admitted two minutes ago whose create
// message never reached the queue, and returns its instance.
func admitLostCreate(t testing.TB, st store.Store, jobID int64) string {
	t.Helper()
	admitted := time.Now().Add(-2 * time.Minute)
	labels := []string{"self-hosted", "linux", "x64"}
	job := &runner.Job{
		ID: jobID, RunAttempt: 1, Pool: linuxPool, Owner: runner.Owner{Org: "octo-org"}, Repository: "octo-org/app",
		Labels: labels, Status: runner.JobOpen, Made: 1,
		QueuedAt: admitted, CreatedAt: admitted, UpdatedAt: admitted, StatusChangedAt: admitted,
	}
	job.Instance = job.InstanceFor(1)
	err := st.CreateInstance(context.Background(), store.Admission{
		Instance: &runner.Instance{
			Name: job.Instance, Pool: linuxPool, Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
			JobID: jobID, RunAttempt: 1, Owner: runner.Owner{Org: "octo-org"}, Labels: labels,
			CreatedAt: admitted, UpdatedAt: admitted, StatusChangedAt: admitted,
		},
		MaxRunners: 50,
		Job:        job,
	})
	if err != nil {
		t.Fatal(err)
	}
	return job.Instance
}
