package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/runner"
)

// GitHub's own workflow_job examples (npm @octokit/webhooks-examples,
// installed by `make emulators`) must parse into the fields runfleet acts on
// and be accepted when delivered the way GitHub delivers them.

// exampleWant is what runfleet must read from one example.
type exampleWant struct {
	action       string
	status       string
	jobID        int64
	runID        int64
	runAttempt   int64
	labels       []string
	runner       string // "" = runner_name null
	runnerID     int64  // 0 = runner_id null
	conclusion   string // "" = null
	repo         string
	repoOwner    string
	org          string // "" = no organization object
	installation int64  // 0 = no installation object
}

// workflowJobExamples is the pinned package's workflow_job examples, in its order.
var workflowJobExamples = []exampleWant{
	// No run_attempt (an old example): ParseWorkflowJob reads it as attempt 1.
	{action: "in_progress", status: "in_progress", jobID: 2832853555, runID: 940463255, runAttempt: 1, labels: []string{"gpu", "db-app", "dc-03"},
		runner: "my runner", runnerID: 1, repo: "octo-org/example-workflow", repoOwner: "octo-org", org: "octo-org"},
	{action: "completed", status: "completed", jobID: 289782451, runID: 2202229078, runAttempt: 1, labels: []string{"ubuntu-latest"},
		runner: "GitHub Actions 5", runnerID: 5, conclusion: "failure", repo: "Codertocat/Hello-World", repoOwner: "Octocoders", org: "Octocoders"},
	{action: "completed", status: "completed", jobID: 289782451, runID: 2202229078, runAttempt: 1, labels: []string{"ubuntu-latest"},
		runner: "GitHub Actions 5", runnerID: 5, conclusion: "success", repo: "Codertocat/Hello-World", repoOwner: "Octocoders", org: "Octocoders"},
	{action: "in_progress", status: "in_progress", jobID: 289782451, runID: 2202229078, runAttempt: 1, labels: []string{"ubuntu-latest"},
		runner: "GitHub Actions 5", runnerID: 5, repo: "Codertocat/Hello-World", repoOwner: "Octocoders", installation: 1},
	{action: "in_progress", status: "in_progress", jobID: 14541957942, runID: 5373506832, runAttempt: 1, labels: []string{"ubuntu-latest"},
		runner: "GitHub Actions 6", runnerID: 6, repo: "wolfy1339/github-events-schemas", repoOwner: "wolfy1339", installation: 3456996},
	// This queued example shows runner fields that GitHub sends as null
	// while a job is queued (github-semantics.md): the example is wrong, not
	// the parser. ParseWorkflowJob reports what the payload says; the
	// engine's queued path never reads runner fields (it keys the instance
	// on job id, run attempt, labels and owner), so the error is harmless.
	{action: "queued", status: "queued", jobID: 289782451, runID: 2202229078, runAttempt: 1, labels: []string{"ubuntu-latest"},
		runner: "GitHub Actions 5", runnerID: 5, repo: "Codertocat/Hello-World", repoOwner: "Octocoders", installation: 3456996},
	// A real queued delivery of an environment-gated job: runner fields
	// null, as GitHub sends them, and status already "waiting".
	{action: "queued", status: "waiting", jobID: 12877621891, runID: 4747967848, runAttempt: 1, labels: []string{"self-hosted", "k8s"},
		repo: "lineville/elastic-machines-testing", repoOwner: "lineville", installation: 23154469},
	{action: "waiting", status: "waiting", jobID: 12877621891, runID: 4747967848, runAttempt: 1, labels: []string{"self-hosted", "k8s"},
		repo: "lineville/elastic-machines-testing", repoOwner: "lineville", installation: 23154469},
}

func TestGitHubWorkflowJobExamplesParse(t *testing.T) {
	examples := githubtest.WebhookExamples(t, EventWorkflowJob)
	if len(examples) != len(workflowJobExamples) {
		t.Fatalf("@octokit/webhooks-examples has %d workflow_job examples, this test knows %d: update the table for the pinned version",
			len(examples), len(workflowJobExamples))
	}
	seen := map[string]bool{}
	for i, ex := range examples {
		want := workflowJobExamples[i]
		t.Run(fmt.Sprintf("%d-%s", i, ex.Action), func(t *testing.T) {
			ev, err := ParseWorkflowJob(ex.Payload)
			if err != nil {
				t.Fatalf("ParseWorkflowJob: %v", err)
			}
			checkExample(t, ev, want)
		})
		seen[ex.Action] = true
	}
	for _, action := range []runner.JobAction{runner.ActionQueued, runner.ActionInProgress, runner.ActionCompleted, runner.ActionWaiting} {
		if !seen[string(action)] {
			t.Errorf("no %s example", action)
		}
	}
}

func checkExample(t *testing.T, ev *WorkflowJobEvent, want exampleWant) {
	t.Helper()
	j := ev.WorkflowJob
	if ev.Action != want.action || j.Status != want.status || j.ID != want.jobID || j.RunID != want.runID ||
		j.RunAttempt != want.runAttempt || !slices.Equal(j.Labels, want.labels) {
		t.Errorf("action %q status %q job %d run %d attempt %d labels %v, want %+v",
			ev.Action, j.Status, j.ID, j.RunID, j.RunAttempt, j.Labels, want)
	}
	if j.Runner() != want.runner || (want.runner == "") != (j.RunnerName == nil) {
		t.Errorf("runner_name = %v, want %q", j.RunnerName, want.runner)
	}
	if (want.runnerID == 0) != (j.RunnerID == nil) || (j.RunnerID != nil && *j.RunnerID != want.runnerID) {
		t.Errorf("runner_id = %v, want %d", j.RunnerID, want.runnerID)
	}
	if want.runner == "" && (j.RunnerGroupID != nil || j.RunnerGroupName != nil) {
		t.Errorf("runner group fields must be null with the runner's: %v %v", j.RunnerGroupID, j.RunnerGroupName)
	}
	if got := deref(j.Conclusion); got != want.conclusion || (want.conclusion == "") != (j.Conclusion == nil) {
		t.Errorf("conclusion = %v, want %q", j.Conclusion, want.conclusion)
	}
	if ev.Repository.FullName != want.repo || ev.Repository.Owner == nil || ev.Repository.Owner.Login != want.repoOwner {
		t.Errorf("repository = %+v, want %s owned by %s", ev.Repository, want.repo, want.repoOwner)
	}
	if (want.org == "") != (ev.Organization == nil) || (ev.Organization != nil && ev.Organization.Login != want.org) {
		t.Errorf("organization = %+v, want %q", ev.Organization, want.org)
	}
	if (want.installation == 0) != (ev.Installation == nil) || (ev.Installation != nil && ev.Installation.ID != want.installation) {
		t.Errorf("installation = %+v, want %d", ev.Installation, want.installation)
	}
	if ev.Enterprise != nil {
		t.Errorf("enterprise = %+v, none of the examples is an enterprise delivery", ev.Enterprise)
	}
	if want.action == string(runner.ActionCompleted) && (j.CompletedAt == nil || j.StartedAt == nil || !j.CompletedAt.After(*j.StartedAt)) {
		t.Errorf("completed: started_at %v completed_at %v", j.StartedAt, j.CompletedAt)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// githubDelivery is a request as GitHub's webhook sender makes it.
func githubDelivery(body []byte, deliveryID, targetType string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", "GitHub-Hookshot/a1b2c3d")
	h.Set("Accept", "*/*")
	h.Set(EventHeader, EventWorkflowJob)
	h.Set(DeliveryHeader, deliveryID)
	h.Set("X-GitHub-Hook-ID", "42")
	h.Set("X-GitHub-Hook-Installation-Target-Type", targetType)
	h.Set("X-GitHub-Hook-Installation-Target-ID", "1")
	h.Set(SignatureHeader, Sign(testSecret, body))
	return h
}

func TestGitHubWorkflowJobExamplesAreAcceptedWhenSigned(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.intake)
	t.Cleanup(srv.Close)
	examples := githubtest.WebhookExamples(t, EventWorkflowJob)
	for i, ex := range examples {
		delivery := fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc09%02d", i)
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(ex.Payload))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = githubDelivery(ex.Payload, delivery, "organization")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		reply := decodeReply(t, body)
		if resp.StatusCode != http.StatusOK || reply.Status != StatusProcessed || reply.JobID != workflowJobExamples[i].jobID {
			t.Errorf("example %d (%s): %d %+v", i, ex.Action, resp.StatusCode, reply)
		}
	}
	calls := f.handler.Calls()
	if len(calls) != len(examples) {
		t.Fatalf("engine got %d events, want %d", len(calls), len(examples))
	}
	for i, c := range calls {
		if string(c.ev.Action) != examples[i].Action || c.ev.JobID != workflowJobExamples[i].jobID {
			t.Errorf("event %d: %s job %d", i, c.ev.Action, c.ev.JobID)
		}
	}
}

func TestGitHubExampleWithAlteredBodyIsRejected(t *testing.T) {
	f := newFixture(t, nil)
	ex := githubtest.WebhookExamples(t, EventWorkflowJob)[0]
	h := githubDelivery(ex.Payload, "d-1", "repository")
	// Re-encoding changes bytes but not meaning: the signature covers the
	// raw bytes, so the delivery must be refused.
	var v any
	if err := json.Unmarshal(ex.Payload, &v); err != nil {
		t.Fatal(err)
	}
	compact, _ := json.Marshal(v)
	resp := f.intake.Handle(context.Background(), Request{Headers: h, Body: compact})
	if resp.StatusCode != http.StatusUnauthorized || len(f.handler.Calls()) != 0 {
		t.Fatalf("re-encoded body: %d, %d engine calls", resp.StatusCode, len(f.handler.Calls()))
	}
}

// The committed copies (for tests that run without npm) must still be the
// package's examples.
func TestCommittedExamplesMatchThePackage(t *testing.T) {
	index := map[string]int{"queued": 6, "in_progress": 4, "completed": 2, "waiting": 7}
	examples := githubtest.WebhookExamples(t, EventWorkflowJob)
	for action, i := range index {
		committed, err := os.ReadFile(filepath.Join("testdata", "octokit-webhooks-examples", "workflow_job."+action+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, committed, examples[i].Payload) {
			t.Errorf("testdata workflow_job.%s.json differs from example %d of @octokit/webhooks-examples", action, i)
		}
		ev, err := ParseWorkflowJob(committed)
		if err != nil || ev.Action != action {
			t.Errorf("workflow_job.%s.json: %v (action %v)", action, err, ev)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(raw []byte) any {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// GitHub's documented example, end to end: the vector's signature over the
// vector's body is what the intake verifies before anything else.
func TestIntakeVerifiesGitHubsTestVector(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Secret = []byte(vectorSecret) })
	h := http.Header{}
	h.Set(EventHeader, EventPing)
	h.Set(DeliveryHeader, "vector")
	h.Set(SignatureHeader, vectorSignature)
	if resp := f.intake.Handle(context.Background(), Request{Headers: h, Body: []byte(vectorBody)}); resp.StatusCode != http.StatusOK {
		t.Fatalf("GitHub's test vector was refused: %d %s", resp.StatusCode, resp.Body)
	}
	h.Set(SignatureHeader, Sign([]byte(vectorSecret), []byte(vectorBody+" ")))
	if resp := f.intake.Handle(context.Background(), Request{Headers: h, Body: []byte(vectorBody)}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a signature over other bytes was accepted: %d", resp.StatusCode)
	}
}
