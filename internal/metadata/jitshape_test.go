package metadata

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
)

// installScriptAgentID is how the install script (and GARM's) finds the
// runner id in .runner.
var installScriptAgentID = regexp.MustCompile(`"agentId": *([0-9]+)`)

// The simulated GitHub and the fake GitHub server hand out JIT
// configurations of GitHub's shape: the credentials endpoints can serve
// their files with `github.simulated: true` and in tests against the fake.
func TestSimulatedAndFakeGitHubJITConfigsDecodeIntoRunnerFiles(t *testing.T) {
	sim := ghsim.New()
	cfg, err := sim.GenerateJITConfig(context.Background(), github.JITRequest{
		Owner: github.Owner{Org: "octo-org"}, Name: "runfleet-sim-1-1", Labels: []string{"self-hosted"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("simulated", func(t *testing.T) { checkRunnerFiles(t, cfg.EncodedJITConfig, cfg.RunnerID) })

	encoded, id := fakeServerJIT(t)
	t.Run("githubtest", func(t *testing.T) { checkRunnerFiles(t, encoded, id) })
}

func checkRunnerFiles(t *testing.T, encoded string, runnerID int64) {
	t.Helper()
	files, err := jitFiles(encoded)
	if err != nil {
		t.Fatalf("jitFiles: %v", err)
	}
	for _, name := range []string{".runner", ".credentials", ".credentials_rsaparams"} {
		var doc map[string]any
		if err := json.Unmarshal(files[name], &doc); err != nil {
			t.Errorf("%s is not the JSON file the runner expects: %q", name, files[name])
		}
	}
	if len(files) != 3 {
		t.Errorf("%d files, want exactly the runner's three", len(files))
	}
	m := installScriptAgentID.FindSubmatch(files[".runner"])
	if m == nil || string(m[1]) != strconv.FormatInt(runnerID, 10) {
		t.Errorf("the install script would not find agent id %d in .runner:\n%s", runnerID, files[".runner"])
	}
}

// fakeServerJIT registers a runner at the fake GitHub server, as the real
// client would, and returns its encoded config and id.
func fakeServerJIT(t *testing.T) (string, int64) {
	const pat = "ghp_jitshape"
	srv := githubtest.NewServer(t, githubtest.WithToken(pat))
	srv.AddOrg("octo-org")
	body, _ := json.Marshal(map[string]any{"name": "runfleet-fake-1-1", "runner_group_id": 1, "labels": []string{"self-hosted"}})
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"orgs/octo-org/actions/runners/generate-jitconfig", bytes.NewReader(body))
	req.Header.Set("Authorization", "token "+pat)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Runner struct {
			ID int64 `json:"id"`
		} `json:"runner"`
		EncodedJITConfig string `json:"encoded_jit_config"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil {
		t.Fatalf("generate-jitconfig: %d %s", resp.StatusCode, raw)
	}
	return out.EncodedJITConfig, out.Runner.ID
}
