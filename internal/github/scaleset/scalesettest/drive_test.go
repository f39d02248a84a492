package scalesettest_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// A driver outside a test plays a scale set's runners with what the fake
// tells it: the scale set a listener made, its runners, a runner leaving.
// The JIT config is in GitHub's shape, so a machine booting with it gets
// the runner's files.
func TestDriverSeesTheScaleSetAndItsRunners(t *testing.T) {
	fake := scalesettest.New(t, scalesettest.Options{})
	client := fake.Client(t)
	set, err := client.EnsureScaleSet(t.Context(), "", scaleset.ScaleSetSpec{Name: "linux-scale"})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := fake.ScaleSetID("linux-scale"); !ok || id != set.ID {
		t.Fatalf("ScaleSetID = %d, %v; want %d", id, ok, set.ID)
	}
	if _, ok := fake.ScaleSetID("other"); ok {
		t.Error("ScaleSetID found a scale set nobody made")
	}
	jit, err := client.GenerateJITConfig(t.Context(), set.ID, "runner-1", "")
	if err != nil {
		t.Fatal(err)
	}
	files := decodeJIT(t, jit.EncodedJITConfig)
	var runnerFile struct {
		AgentID   int64  `json:"agentId"`
		AgentName string `json:"agentName"`
	}
	if err := json.Unmarshal(files[".runner"], &runnerFile); err != nil || runnerFile.AgentID != jit.Runner.ID || runnerFile.AgentName != "runner-1" {
		t.Errorf(".runner = %s (%v); want agentId %d, agentName runner-1", files[".runner"], err, jit.Runner.ID)
	}
	for _, name := range []string{".credentials", ".credentials_rsaparams"} {
		if len(files[name]) == 0 {
			t.Errorf("the JIT config has no %s", name)
		}
	}

	id := fake.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{"linux-scale"}})
	if got := fake.JobState(id); got != "assigned" {
		t.Errorf("JobState = %q, want assigned", got)
	}
	if err := fake.StartJob(id, "runner-1"); err != nil {
		t.Fatal(err)
	}
	runners := fake.Runners()
	if len(runners) != 1 || runners[0].Name != "runner-1" || runners[0].SetID != set.ID || !runners[0].Busy || runners[0].ID != jit.Runner.ID {
		t.Fatalf("Runners = %+v; want runner-1 busy in scale set %d", runners, set.ID)
	}
	if !fake.RunnerLeaves("runner-1") || fake.RunnerLeaves("runner-1") {
		t.Error("RunnerLeaves: want true once, then false")
	}
	if len(fake.Runners()) != 0 {
		t.Errorf("the runner is still there after it left: %+v", fake.Runners())
	}
	if got := fake.JobState(999_999); got != "" {
		t.Errorf("JobState of an unknown job = %q", got)
	}
}

// decodeJIT opens a JIT config as the runner does: base64 of a JSON
// object of files, each base64 again.
func decodeJIT(t *testing.T, encoded string) map[string][]byte {
	t.Helper()
	doc, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatalf("the JIT config is not base64: %v", err)
	}
	var entries map[string]string
	if err := json.Unmarshal(doc, &entries); err != nil {
		t.Fatalf("the JIT config is not a JSON object of strings: %v", err)
	}
	out := map[string][]byte{}
	for name, content := range entries {
		if out[name], err = base64.StdEncoding.DecodeString(content); err != nil {
			t.Fatalf("%s is not base64: %v", name, err)
		}
	}
	return out
}
