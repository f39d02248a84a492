package webhook

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// The example payloads drive the README tour; these checks keep them telling
// one consistent story that the parser accepts.
func TestExamplePayloadsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "payloads", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example payloads found: %v", err)
	}
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseWorkflowJob(body); err != nil {
			t.Errorf("%s: %v", filepath.Base(file), err)
		}
	}
}

func TestExamplePayloadsTellOneJobsStory(t *testing.T) {
	parse := func(name string) *WorkflowJobEvent {
		ev, err := ParseWorkflowJob(examplePayload(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return ev
	}
	queued, inProgress, completed := parse("queued.json"), parse("in_progress.json"), parse("completed.json")
	wantRunner := runner.InstanceName("linux-x64", 7000000001, 1)

	for name, ev := range map[string]*WorkflowJobEvent{"queued": queued, "in_progress": inProgress, "completed": completed} {
		j := ev.WorkflowJob
		if ev.Action != name || j.Status != name {
			t.Errorf("%s: action %q, status %q", name, ev.Action, j.Status)
		}
		if j.ID != 7000000001 || j.RunAttempt != 1 || !slices.Equal(j.Labels, []string{"self-hosted", "linux", "x64"}) {
			t.Errorf("%s: job %d attempt %d labels %v", name, j.ID, j.RunAttempt, j.Labels)
		}
		if ev.Repository.FullName != "octo-org/hello-world" || ev.Organization == nil || ev.Organization.Login != "octo-org" ||
			ev.Installation == nil || ev.Installation.ID == 0 {
			t.Errorf("%s: repository/organization/installation = %+v %+v %+v", name, ev.Repository, ev.Organization, ev.Installation)
		}
	}
	if j := queued.WorkflowJob; j.RunnerID != nil || j.RunnerName != nil || j.RunnerGroupID != nil || j.RunnerGroupName != nil {
		t.Error("queued: runner fields must be null, as GitHub sends them")
	}
	for name, ev := range map[string]*WorkflowJobEvent{"in_progress": inProgress, "completed": completed} {
		if ev.WorkflowJob.Runner() != wantRunner || ev.WorkflowJob.RunnerID == nil {
			t.Errorf("%s: runner %q (id %v), want %q with an id", name, ev.WorkflowJob.Runner(), ev.WorkflowJob.RunnerID, wantRunner)
		}
	}
	if c := completed.WorkflowJob.Conclusion; c == nil || *c != "success" || completed.WorkflowJob.CompletedAt == nil {
		t.Error("completed: want conclusion success and completed_at")
	}

	broken := parse("queued-broken.json")
	if broken.Action != string(runner.ActionQueued) || broken.WorkflowJob.ID != 7000000002 ||
		!slices.Equal(broken.WorkflowJob.Labels, []string{"self-hosted", "linux", "broken"}) || broken.WorkflowJob.RunnerName != nil {
		t.Errorf("queued-broken: %+v", broken.WorkflowJob)
	}
}

// The engine tells a job's own failure from its machine's interruption by
// completed_at: the completed payload's must reach the JobEvent, and a
// queued one (null there) must give none.
func TestJobEventCarriesCompletedAt(t *testing.T) {
	completed, err := ParseWorkflowJob(examplePayload(t, "completed.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 5, 14, 9, 13, 36, 0, time.UTC)
	if got := completed.JobEvent().CompletedAt; !got.Equal(want) {
		t.Errorf("completed: JobEvent().CompletedAt = %v, want %v (the payload's completed_at)", got, want)
	}
	queued, err := ParseWorkflowJob(examplePayload(t, "queued.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := queued.JobEvent().CompletedAt; !got.IsZero() {
		t.Errorf("queued: JobEvent().CompletedAt = %v, want zero", got)
	}
}
