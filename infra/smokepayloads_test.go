package infra

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
)

// The smoke test of docs/deploy.md sends examples/payloads/queued.json and
// the smoke-* payloads to a stack with the default RunfleetConfig. Its pool
// must take the queued job, and the later deliveries must name the runner
// that pool gives the job, or runfleet ignores them as another pool's.
func TestSmokePayloadsFitTheDefaultPool(t *testing.T) {
	tpl := loadTemplate(t)
	yamlText := tpl.get("Parameters").get("RunfleetConfig").get("Default").str()
	lookup := func(string) (string, bool) { return "a-webhook-secret", true }
	noFiles := func(string) ([]byte, error) { return nil, errors.New("no files on Lambda") }
	cfg, err := config.Parse([]byte(yamlText), lookup, noFiles)
	if err != nil {
		t.Fatalf("RunfleetConfig default: %v", err)
	}
	if len(cfg.Pools) != 1 {
		t.Fatalf("RunfleetConfig default has %d pools; the smoke test is written for one", len(cfg.Pools))
	}
	pool := cfg.Pools[0]

	queued := readPayload(t, "queued.json")
	if queued.Organization.Login != pool.Owner {
		t.Errorf("queued.json is from %q, the default pool serves %q", queued.Organization.Login, pool.Owner)
	}
	for _, label := range queued.WorkflowJob.Labels {
		if !slices.ContainsFunc(pool.Labels, func(l string) bool { return strings.EqualFold(l, label) }) {
			t.Errorf("queued.json asks for label %q, which the default pool %s lacks (%v)", label, pool.Name, pool.Labels)
		}
	}
	want := runner.InstanceName(pool.Name, queued.WorkflowJob.ID, queued.WorkflowJob.RunAttempt)
	for _, name := range []string{"smoke-in_progress.json", "smoke-completed.json"} {
		p := readPayload(t, name)
		if p.WorkflowJob.ID != queued.WorkflowJob.ID || p.WorkflowJob.RunAttempt != queued.WorkflowJob.RunAttempt {
			t.Errorf("%s is about job %d attempt %d, queued.json about %d attempt %d", name,
				p.WorkflowJob.ID, p.WorkflowJob.RunAttempt, queued.WorkflowJob.ID, queued.WorkflowJob.RunAttempt)
		}
		if p.WorkflowJob.RunnerName != want {
			t.Errorf("%s names runner %q, want %q (pool %s)", name, p.WorkflowJob.RunnerName, want, pool.Name)
		}
	}
}

// smokePayload is the part of a workflow_job delivery the smoke test
// depends on.
type smokePayload struct {
	WorkflowJob struct {
		ID         int64    `json:"id"`
		RunAttempt int64    `json:"run_attempt"`
		Labels     []string `json:"labels"`
		RunnerName string   `json:"runner_name"`
	} `json:"workflow_job"`
	Organization struct {
		Login string `json:"login"`
	} `json:"organization"`
}

func readPayload(t *testing.T, name string) smokePayload {
	t.Helper()
	data, err := os.ReadFile("../examples/payloads/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var p smokePayload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}
