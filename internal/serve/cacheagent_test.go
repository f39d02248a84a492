package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/webhook"
)

// agentToken mints an agent token with the key serve generated in dir.
func agentToken(t *testing.T, dir, instance string) string {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, serve.TokenKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	agents, err := cache.NewAgentTokens(bytes.TrimSpace(key), "ctl", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := agents.Mint(instance, "p", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jobToken posts the machine's job to serve's job token endpoint.
func jobToken(t *testing.T, base, agentTok string, env cache.JobEnv) (int, cache.JobTokenResponse) {
	t.Helper()
	b, _ := json.Marshal(env)
	req, _ := http.NewRequest(http.MethodPost, base+cache.JobTokenPath, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+agentTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out cache.JobTokenResponse
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A machine of a pool in cache.pools gets its cache agent's configuration
// at boot with its instance token, and its agent trades the agent token for
// a cache token of its job's repository — checked against the ledger —
// which serve's cache then accepts.
func TestServeHandsMachinesACacheAgent(t *testing.T) {
	boot := enginetest.BuildBootProvider(t)
	state := filepath.Join(t.TempDir(), "state")
	cacheDir := filepath.Join(t.TempDir(), "cache")
	s := startServe(t, func(base string) string {
		return `
controller_id: ctl
github: {simulated: true}
webhook: {secret_env: SECRET}
server: {public_url: ` + base + `}
store: {dir: ` + state + `}
engine: {workers: 2}
cache: {dir: ` + cacheDir + `, pools: [p]}
pools:
  - name: p
    owner: octo-org
    labels: [x]
    max_runners: 1
    provider:
      type: external
      settings: {provider_executable: ` + boot.Executable + `, config_file: ` + boot.ConfigFile + `}
`
	})
	body, _ := json.Marshal(webhook.WorkflowJobEvent{
		Action:       string(runner.ActionQueued),
		WorkflowJob:  webhook.WorkflowJob{ID: 9, RunID: 90, RunAttempt: 1, Status: string(runner.ActionQueued), Labels: []string{"x"}},
		Repository:   &webhook.Repository{FullName: "octo-org/hello", Name: "hello"},
		Organization: &webhook.Account{Login: "octo-org"},
		Installation: &webhook.Installation{ID: 1},
	})
	res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("secret"), "workflow_job", body, "")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("queued webhook: %v %+v", err, res)
	}
	name := runner.InstanceName("p", 9, 1)
	enginetest.Eventually(t, "the provider to create the machine", func() bool { return boot.Booted(name) })
	machine := boot.Record(t, name)
	if st, _, _ := enginetest.CallJSON(t, http.MethodGet, s.base+"/metadata/"+name+"/cache-agent", "x"); st != http.StatusUnauthorized {
		t.Fatalf("cache-agent without a token = %d", st)
	}

	// The fake machine reports idle at once, spending its instance token
	// before the test could ask metadata/cache-agent (tested in
	// internal/metadata): the agent token is minted with serve's key here.
	cfg := metadata.CacheAgentConfig{AgentToken: agentToken(t, state, name)}
	push := cache.JobEnv{Repository: "octo-org/hello", Ref: "refs/heads/main", EventName: "push", DefaultBranch: "main"}
	status, tok := jobToken(t, s.base, cfg.AgentToken, push)
	if status != http.StatusOK || tok.Write != "refs/heads/main" {
		t.Fatalf("job token = %d %+v", status, tok)
	}
	if st, out := twirp(t, s.base, tok.Token, "GetCacheEntryDownloadURL", `{"key":"k","version":"v"}`); st != http.StatusOK || out["ok"] != false {
		t.Fatalf("lookup with the job token = %d %v", st, out)
	}
	other := push
	other.Repository = "octo-org/other"
	// The machine is bound to the push it presented first: any other
	// description is refused before the ledger is read (the ledger's 409
	// for a job not yet in progress: internal/cache's binding tests).
	if status, _ := jobToken(t, s.base, cfg.AgentToken, other); status != http.StatusForbidden {
		t.Fatalf("another repository than the one the machine is bound to = %d, want 403", status)
	}
	if status, _ := jobToken(t, s.base, machine.Token, push); status != http.StatusUnauthorized {
		t.Fatalf("an instance token as agent token = %d, want 401", status)
	}
}
