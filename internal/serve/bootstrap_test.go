package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/webhook"
)

// running is one `runfleet serve` in the test, on a free port.
type running struct {
	base string
	stop func()
}

func startServe(t *testing.T, yaml func(base string) string) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := parseConfig(t, yaml(base))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Listener: ln, Logger: slog.New(slog.DiscardHandler)})
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve.Run: %v", err)
		}
	}
	t.Cleanup(stop)
	waitHealthy(t, base)
	return &running{base: base, stop: stop}
}

// With server.public_url set the metadata routes are served, behind the
// instance token, and a token key is generated once and kept in store.dir.
func TestBootstrapRoutesWithAGeneratedKey(t *testing.T) {
	dir := t.TempDir()
	config := func(base string) string {
		return baseConfig(dir, "{simulated: true}") + "server: {public_url: " + base + "}\n"
	}
	s := startServe(t, config)
	for _, path := range []string{"/metadata/runfleet-p-1-1/credentials/runner", "/metadata/runfleet-p-1-1/system/service-name"} {
		status, body, _ := enginetest.CallJSON(t, http.MethodGet, s.base+path, "")
		if status != http.StatusUnauthorized || !strings.Contains(body["error"].(string), "missing instance token") {
			t.Fatalf("GET %s without a token = %d %v, want 401", path, status, body)
		}
	}
	if status, _, _ := enginetest.CallJSON(t, http.MethodGet, s.base+"/metadata/runfleet-p-1-1/runner-metadata", "not-a-token"); status != http.StatusUnauthorized {
		t.Fatalf("a garbage token = %d, want 401", status)
	}
	s.stop()

	keyFile := filepath.Join(dir, serve.TokenKeyFile)
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("no generated key: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", info.Mode().Perm())
	}
	key, _ := os.ReadFile(keyFile)
	if len(bytes.TrimSpace(key)) < 32 {
		t.Fatalf("generated key is %d bytes", len(bytes.TrimSpace(key)))
	}
	startServe(t, config).stop()
	if again, _ := os.ReadFile(keyFile); !bytes.Equal(again, key) {
		t.Fatal("a restart replaced the generated key: machines booting across it would be refused")
	}
}

func TestBootstrapOffWithoutPublicURL(t *testing.T) {
	s := startServe(t, func(string) string { return baseConfig(t.TempDir(), "{simulated: true}") })
	status, body, _ := enginetest.CallJSON(t, http.MethodGet, s.base+"/metadata/runfleet-p-1-1/credentials/runner", "")
	if status != http.StatusNotFound || !strings.Contains(body["error"].(string), "server.public_url") {
		t.Fatalf("metadata route with bootstrap off = %d %v, want 404 naming server.public_url", status, body)
	}
}

func TestShortKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, serve.TokenKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, baseConfig(dir, "{simulated: true}")+"server: {public_url: https://runfleet.example}\n")
	err := serve.Run(context.Background(), serve.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("Run with a short key file = %v, want it refused", err)
	}
}

// `runfleet serve` wires bootstrap end to end: a signed webhook, a create
// through a GARM external provider whose BootstrapInstance carries the
// token and this server's URLs, and the machine's callback moving the
// runner in the store.
func TestServeHandsMachinesAWorkingToken(t *testing.T) {
	boot := enginetest.BuildBootProvider(t)
	state := filepath.Join(t.TempDir(), "state")
	s := startServe(t, func(base string) string {
		return `
controller_id: ctl
github: {simulated: true}
webhook: {secret_env: SECRET}
server: {public_url: ` + base + `}
store: {dir: ` + state + `}
engine: {workers: 2}
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
	if machine.Token == "" || machine.MetadataURL != s.base+"/metadata/"+name || machine.Statuses["installing"] != http.StatusOK {
		t.Fatalf("machine: token %t, metadata URL %q, calls %v", machine.Token != "", machine.MetadataURL, machine.Statuses)
	}
	s.stop()

	st, err := bolt.Open(filepath.Join(state, serve.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inst, err := st.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if inst.RunnerStatus != runner.RunnerInstalling && inst.RunnerStatus != runner.RunnerIdle {
		t.Fatalf("runner status after the machine's callbacks = %s, want installing or idle", inst.RunnerStatus)
	}
}
