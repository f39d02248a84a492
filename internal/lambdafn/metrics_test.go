package lambdafn_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

const controllerID = "lambda-test"

// emfValues returns every value of metric in the EMF lines that declare it
// under exactly the dimensions of dims (controller_id is added) with those
// values: array members one by one. A line may carry several directives
// (metrics whose dimension values agree share one); the metric's own
// directive says which sets it is published under.
func (s *stack) emfValues(t testing.TB, metric string, dims map[string]string) []float64 {
	t.Helper()
	want := []string{metrics.LabelControllerID}
	match := map[string]any{metrics.LabelControllerID: controllerID}
	for k, v := range dims {
		want = append(want, k)
		match[k] = v
	}
	sort.Strings(want)
	var out []float64
	for _, line := range s.metrics.Lines(t, match) {
		if _, ok := line[metric]; !ok {
			continue
		}
		directive, ok := declaringDirective(line, metric)
		if !ok {
			continue
		}
		declared := false
		for _, set := range directive["Dimensions"].([]any) {
			var names []string
			for _, n := range set.([]any) {
				names = append(names, n.(string))
			}
			sort.Strings(names)
			declared = declared || slices.Equal(names, want)
		}
		if !declared {
			continue
		}
		switch v := line[metric].(type) {
		case float64:
			out = append(out, v)
		case []any:
			for _, x := range v {
				out = append(out, x.(float64))
			}
		}
	}
	return out
}

// declaringDirective is the metric directive of an EMF line that declares
// metric.
func declaringDirective(line map[string]any, metric string) (map[string]any, bool) {
	for _, d := range line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any) {
		directive := d.(map[string]any)
		for _, m := range directive["Metrics"].([]any) {
			if m.(map[string]any)["Name"] == metric {
				return directive, true
			}
		}
	}
	return nil, false
}

func sum(values []float64) float64 {
	var n float64
	for _, v := range values {
		n += v
	}
	return n
}

// checkVocabulary fails on any EMF line that strays from the vocabulary:
// namespace runfleet; every metric a family of internal/metrics, declared
// once per line; its dimension sets [controller_id] alone (the rollup
// alarms watch; a gauge's point when nothing is labelled) or that, then
// [controller_id, its labels…] in the family's order, then the family's
// extra sets (metrics.EMFExtraSets); every dimension of a set a string at
// the root of the line.
func (s *stack) checkVocabulary(t testing.TB) {
	t.Helper()
	for _, line := range s.metrics.Lines(t, nil) {
		if line[metrics.LabelControllerID] != controllerID {
			t.Errorf("controller_id %v, want %s: %v", line[metrics.LabelControllerID], controllerID, line)
		}
		declared := map[string]bool{}
		for _, d := range line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any) {
			directive := d.(map[string]any)
			if directive["Namespace"] != "runfleet" {
				t.Errorf("namespace %v, want runfleet: %v", directive["Namespace"], line)
			}
			sets := directive["Dimensions"].([]any)
			for _, set := range sets {
				for _, n := range set.([]any) {
					if _, ok := line[n.(string)].(string); !ok {
						t.Errorf("dimension %v has no value in the line: %v", n, line)
					}
				}
			}
			for _, m := range directive["Metrics"].([]any) {
				name := m.(map[string]any)["Name"].(string)
				if declared[name] {
					t.Errorf("%s declared twice in one line: %v", name, line)
				}
				declared[name] = true
				f, ok := metrics.FamilyByName(name)
				if !ok {
					t.Errorf("EMF metric %q is not in the vocabulary", name)
					continue
				}
				rollup := []any{metrics.LabelControllerID}
				want := []any{rollup}
				if len(sets) > 1 && len(f.Labels) > 0 {
					full := slices.Clone(rollup)
					for _, l := range f.Labels {
						full = append(full, l)
					}
					want = append(want, full)
					for _, extra := range metrics.EMFExtraSets[name] {
						set := []any{metrics.LabelControllerID}
						for _, d := range extra {
							set = append(set, d)
						}
						want = append(want, set)
					}
				}
				if !reflect.DeepEqual(sets, want) {
					t.Errorf("%s declared under %v, want %v", name, sets, want)
				}
			}
		}
	}
}

// The functions write the vocabulary's names, the same as /metrics in
// serve: the webhook function counts deliveries and the queue time to
// "started", the worker the time to "created" and its provider calls, the
// metadata function the time to "online", the reconciler the fleet gauges
// and its pass.
func TestLambdaFunctionsWriteTheVocabularyAsEMF(t *testing.T) {
	s := newStack(t, stackOptions{})
	key, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "token-key")), SecretString: aws.String("lambda-test-instance-token-key-0123456789abcdef\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvInstanceTokenKeyARN, aws.ToString(key.ARN))
	t.Setenv(lambdafn.EnvMetadataURL, metadataFunctionURL)
	recorder := &createRecorder{}
	intake, reconciler := s.webhook(), s.reconciler()
	worker, meta := s.bootWorker(recorder), s.metadata()

	const job = 7000002101
	name := s.runJob(t, intake, worker, job)
	req := recorder.request(t, name)
	inst := s.instance(t, name)
	idle := fmt.Sprintf(`{"status": "idle", "message": "online", "agent_id": %d}`, inst.GitHubRunnerID)
	if resp := s.callMetadata(t, meta, http.MethodPost, req, "status", req.InstanceToken, idle); resp.StatusCode != http.StatusOK {
		t.Fatalf("idle callback = %d %s", resp.StatusCode, resp.Body)
	}
	if status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionInProgress, job, name))); status != http.StatusOK {
		t.Fatalf("in_progress: %d %+v", status, reply)
	}
	bad := functionURLEvent(t, jobPayload(t, runner.ActionQueued, job+1, ""))
	bad.Headers["x-hub-signature-256"] = "sha256=" + fmt.Sprintf("%064d", 0)
	if status, _ := s.deliver(t, intake, bad); status != http.StatusUnauthorized {
		t.Fatalf("forged delivery answered %d, want 401", status)
	}

	webhooks := func(action, result string) float64 {
		return sum(s.emfValues(t, metrics.Webhooks, map[string]string{"event": "workflow_job", "action": action, "result": result}))
	}
	if got := webhooks("queued", metrics.WebhookAccepted); got != 1 {
		t.Errorf("%s{queued, accepted} = %v, want 1", metrics.Webhooks, got)
	}
	if got := webhooks("in_progress", metrics.WebhookAccepted); got != 1 {
		t.Errorf("%s{in_progress, accepted} = %v, want 1", metrics.Webhooks, got)
	}
	if got := webhooks(metrics.None, metrics.WebhookBadSignature); got != 1 {
		t.Errorf("%s{none, bad_signature} = %v, want 1", metrics.Webhooks, got)
	}
	if got := sum(s.emfValues(t, metrics.Webhooks, nil)); got != 3 {
		t.Errorf("%s rollup = %v, want the 3 deliveries", metrics.Webhooks, got)
	}

	var waited []float64
	for _, stage := range []string{"created", "online", "started"} {
		got := s.emfValues(t, metrics.JobQueueSeconds, map[string]string{"pool": linuxPool, "stage": stage})
		if len(got) != 1 || got[0] < 0 {
			t.Fatalf("%s{%s} = %v, want one sample", metrics.JobQueueSeconds, stage, got)
		}
		waited = append(waited, got[0])
	}
	if !slices.IsSorted(waited) {
		t.Errorf("queue time by stage created, online, started = %v: a later stage waited less", waited)
	}
	// The sets the alarms read: a stage over every pool, a result over
	// every pool and operation.
	if got := s.emfValues(t, metrics.JobQueueSeconds, map[string]string{"stage": "started"}); !reflect.DeepEqual(got, waited[2:]) {
		t.Errorf("%s{controller_id, stage=started} = %v, want %v", metrics.JobQueueSeconds, got, waited[2:])
	}
	if got := sum(s.emfValues(t, metrics.ProviderOperations, map[string]string{"result": "ok"})); got < 1 {
		t.Errorf("%s{controller_id, result=ok} = %v, want the create", metrics.ProviderOperations, got)
	}
	if got := sum(s.emfValues(t, metrics.ProviderOperations, map[string]string{"pool": linuxPool, "op": "create", "result": "ok"})); got != 1 {
		t.Errorf("%s{create, ok} = %v, want 1", metrics.ProviderOperations, got)
	}
	if got := s.emfValues(t, metrics.ProviderOperationDuration, map[string]string{"pool": linuxPool, "op": "create"}); len(got) != 1 {
		t.Errorf("%s{create} = %v, want one sample", metrics.ProviderOperationDuration, got)
	}

	// The worker's invocation writes its metrics merged: the queue time to
	// "created" and the create it waited for agree on the pool, so one line
	// carries both (the sums above are what CloudWatch extracts from it).
	merged := false
	for _, line := range s.metrics.Lines(t, map[string]any{"stage": "created", "op": "create"}) {
		_, waited := line[metrics.JobQueueSeconds]
		_, created := line[metrics.ProviderOperations]
		merged = merged || (waited && created)
	}
	if !merged {
		t.Errorf("no EMF line carries both %s{created} and %s{create}: the worker's metrics are not merged", metrics.JobQueueSeconds, metrics.ProviderOperations)
	}

	s.metrics.Reset()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, _ := s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatal(err)
	}
	if got := s.emfValues(t, metrics.Instances, map[string]string{"pool": linuxPool, "status": "running"}); !reflect.DeepEqual(got, []float64{1}) {
		t.Errorf("%s{running} = %v, want [1]", metrics.Instances, got)
	}
	for _, zero := range []string{metrics.InstancesStuck, metrics.JobsWaitingForCapacity, metrics.OpenJobs} {
		if got := s.emfValues(t, zero, nil); !reflect.DeepEqual(got, []float64{0}) {
			t.Errorf("%s rollup = %v, want one 0: the alarm's series has a point every pass", zero, got)
		}
	}
	if got := s.emfValues(t, metrics.ReconcilePasses, map[string]string{"result": "ok"}); !reflect.DeepEqual(got, []float64{1}) {
		t.Errorf("%s{ok} = %v, want [1]", metrics.ReconcilePasses, got)
	}
	for _, once := range []string{metrics.ReconcilePassDuration, metrics.ReconcileLastPass} {
		if got := s.emfValues(t, once, nil); len(got) != 1 {
			t.Errorf("%s = %v, want one sample", once, got)
		}
	}
	if got := sum(s.emfValues(t, metrics.ReconcileActions, map[string]string{"action": "examined"})); got != 1 {
		t.Errorf("%s{examined} = %v, want 1", metrics.ReconcileActions, got)
	}
	s.checkVocabulary(t)
}

// With the real GitHub client (against a fake GitHub), the worker reports
// the calls its invocation made by operation and result, and the
// remaining rate limit; the reconciler reports its own calls.
func TestWorkerAndReconcilerPublishGitHubMetrics(t *testing.T) {
	const pat = "ghp_metricstest"
	srv := githubtest.NewServer(t, githubtest.WithToken(pat), githubtest.WithRateLimit(1000))
	srv.AddOrg("octo-org")
	client, err := rest.New(rest.Options{BaseURL: srv.URL(), Token: pat})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{github: client})
	intake, worker, reconciler := s.webhook(), s.worker(), s.reconciler()

	name := s.queue(t, intake, 7000002001, "x64")
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))

	jit := map[string]string{"operation": rest.OpGenerateJITConfig, "result": "ok"}
	if got := s.emfValues(t, metrics.GitHubCalls, jit); !reflect.DeepEqual(got, []float64{1}) {
		t.Fatalf("worker %s{GenerateJITConfig, ok} = %v, want one invocation with 1 call", metrics.GitHubCalls, got)
	}
	remaining := s.emfValues(t, metrics.GitHubRateLimitRemaining, map[string]string{"installation": "0"})
	if len(remaining) == 0 || remaining[len(remaining)-1] >= 1000 || remaining[len(remaining)-1] < 900 {
		t.Fatalf("%s{installation=0} = %v, want the fake's budget after a few calls (limit 1000)", metrics.GitHubRateLimitRemaining, remaining)
	}
	if used := srv.APICallCount(); float64(1000-used) != remaining[len(remaining)-1] {
		t.Errorf("last reported remaining %v, fake GitHub says %d calls were made of 1000", remaining[len(remaining)-1], used)
	}

	s.metrics.Reset()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, _ := s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatal(err)
	}
	if got := s.emfValues(t, metrics.GitHubCalls, map[string]string{"operation": rest.OpListRunners, "result": "ok"}); len(got) != 1 || got[0] < 1 {
		t.Fatalf("reconciler %s{ListRunners, ok} = %v, want the pass's runner listing", metrics.GitHubCalls, got)
	}
	if got := s.emfValues(t, metrics.GitHubCalls, jit); len(got) != 0 {
		t.Fatalf("reconciler reported GenerateJITConfig calls %v: the worker's calls were counted again", got)
	}
	s.checkVocabulary(t)
}

// The simulated GitHub reports nothing about itself: no GitHub metric is
// published, the fleet still is.
func TestSimulatedGitHubPublishesNoGitHubMetrics(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker, reconciler := s.webhook(), s.worker(), s.reconciler()
	name := s.queue(t, intake, 7000002002, "x64")
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, _ := s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatal(err)
	}
	for _, line := range s.metrics.Lines(t, nil) {
		for _, name := range []string{metrics.GitHubCalls, metrics.GitHubRateLimitRemaining, metrics.GitHubAppRefused} {
			if _, ok := line[name]; ok {
				t.Errorf("GitHub metric published with the simulated GitHub: %v", line)
			}
		}
	}
	if live := s.emfValues(t, metrics.Instances, map[string]string{"pool": linuxPool, "status": "running"}); !reflect.DeepEqual(live, []float64{1}) {
		t.Fatalf("%s{%s, running} = %v, want [1]", metrics.Instances, linuxPool, live)
	}
}
