package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/testlog"
)

const (
	testSecret   = "e2e-webhook-secret"
	testAPIToken = "e2e-operator-token"
	// testMaxBody is small so the oversize test need not send a megabyte.
	testMaxBody = 16 << 10
)

// testConfigYAML is examples/local.yaml with zero simulated latency, fast
// delete retries and no reconcile tick during a test (a pass still runs at
// start).
const testConfigYAML = `
controller_id: e2e
github:
  simulated: true
webhook:
  secret_env: E2E_WEBHOOK_SECRET
  max_body_bytes: 16384
server:
  api_token_env: E2E_API_TOKEN
store:
  dir: STORE_DIR
engine:
  workers: 2
  reconcile_interval: 1h
  delete_backoff_min: 10ms
  delete_backoff_max: 100ms
pools:
  - name: linux-x64
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 10
    bootstrap_timeout: 1m
    provider:
      type: simulated
  - name: always-fails
    owner: octo-org
    labels: [self-hosted, linux, broken]
    max_runners: 2
    bootstrap_timeout: 1m
    provider:
      type: simulated
      settings:
        always_fail: true
`

func testConfig(t *testing.T, storeDir string) *config.Config {
	t.Helper()
	data := strings.ReplaceAll(testConfigYAML, "STORE_DIR", storeDir)
	env := map[string]string{"E2E_WEBHOOK_SECRET": testSecret, "E2E_API_TOKEN": testAPIToken}
	cfg, err := config.Parse([]byte(data), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	return cfg
}

// running is one in-process `runfleet serve`.
type running struct {
	url   string
	token string
	logs  *testlog.Buffer
	stop  func()
}

// startServe runs the serve assembly on a free loopback port over storeDir
// and waits until /healthz answers. The server is stopped at cleanup if the
// test did not stop it.
func startServe(t *testing.T, storeDir string, disableWorkers bool) *running {
	t.Helper()
	return startServeConfig(t, testConfig(t, storeDir), disableWorkers)
}

// startServeConfig is startServe with a config of the test's own.
func startServeConfig(t *testing.T, cfg *config.Config, disableWorkers bool) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{
			Config:         cfg,
			Logger:         telemetry.NewLogger(logs, slog.LevelDebug, "controller_id", cfg.ControllerID),
			Listener:       ln,
			DisableWorkers: disableWorkers,
		})
	}()
	r := &running{url: "http://" + ln.Addr().String(), token: cfg.Server.APIToken, logs: logs}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve.Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve did not stop; logs:\n%s", logs)
			}
		})
	}
	t.Cleanup(r.stop)

	enginetest.Eventually(t, "serve to answer /healthz", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve.Run returned at start: %v\nlogs:\n%s", err, logs)
		default:
		}
		resp, err := http.Get(r.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "logs:\n" + logs.String() })
	return r
}

func (r *running) client(t *testing.T) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(r.url, r.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls the operator API until the instance satisfies ok.
func (r *running) waitFor(t *testing.T, name, what string, ok func(*runner.Instance) bool) *runner.Instance {
	t.Helper()
	c := r.client(t)
	var inst *runner.Instance
	enginetest.Eventually(t, "instance "+name+" to become "+what, func() bool {
		got, err := c.GetInstance(context.Background(), name)
		var apiErr *httpapi.Error
		if err != nil && !(errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound) {
			t.Fatalf("show %s: %v", name, err)
		}
		inst = got
		return err == nil && ok(got)
	}, func() string { return fmt.Sprintf("last: %+v\nlogs:\n%s", inst, r.logs) })
	return inst
}

func (r *running) waitStatus(t *testing.T, name string, want runner.Status) *runner.Instance {
	t.Helper()
	return r.waitFor(t, name, string(want), func(i *runner.Instance) bool { return i.Status == want })
}

// cliResult is one in-process run of the runfleet command.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the runfleet command line with only env as its environment.
func runCLI(t *testing.T, env map[string]string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// cliEnv is the environment an operator of r would have.
func (r *running) cliEnv() map[string]string {
	return map[string]string{
		"RUNFLEET_SERVER":         r.url,
		"RUNFLEET_API_TOKEN":      testAPIToken,
		"RUNFLEET_WEBHOOK_SECRET": testSecret,
	}
}

// payload is the path of an example payload shipped in examples/payloads.
func payload(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "examples", "payloads", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
