package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// One server variable for every command: webhook send goes to
// RUNFLEET_SERVER's /webhook like the operator commands go to its API, and
// a --server on the command line beats a RUNFLEET_WEBHOOK_URL in the shell.
func TestWebhookSendFollowsTheServerVariable(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("delivery went to RUNFLEET_WEBHOOK_URL although --server was given")
	}))
	t.Cleanup(other.Close)
	payload := payload(t, "queued.json")

	env := map[string]string{"RUNFLEET_SERVER": srv.URL, "RUNFLEET_WEBHOOK_SECRET": "s"}
	if res := runCLI(t, env, "webhook", "send", payload); res.code != exitOK {
		t.Fatalf("webhook send with RUNFLEET_SERVER: %+v", res)
	}
	env = map[string]string{"RUNFLEET_WEBHOOK_URL": other.URL + "/hook", "RUNFLEET_WEBHOOK_SECRET": "s"}
	if res := runCLI(t, env, "webhook", "send", "--server", srv.URL+"/", payload); res.code != exitOK {
		t.Fatalf("webhook send --server: %+v", res)
	}
	env = map[string]string{"RUNFLEET_SERVER": other.URL, "RUNFLEET_WEBHOOK_SECRET": "s"}
	if res := runCLI(t, env, "webhook", "send", "--url", srv.URL+"/custom", payload); res.code != exitOK {
		t.Fatalf("webhook send --url: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(paths, " "); got != "/webhook /webhook /custom" {
		t.Errorf("deliveries went to %q, want /webhook /webhook /custom", got)
	}
}

// serve --listen (or RUNFLEET_LISTEN) serves on the given address whatever
// the config's server.listen says, and a malformed one is a usage error
// naming the flag.
func TestServeListenOverridesTheConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "runfleet.yaml")
	yaml := strings.ReplaceAll(testConfigYAML, "STORE_DIR", filepath.Join(dir, "state"))
	yaml = strings.Replace(yaml, "server:\n", "server:\n  listen: 127.0.0.1:1\n", 1)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_WEBHOOK_SECRET", testSecret)
	t.Setenv("E2E_API_TOKEN", testAPIToken)

	res := runCLI(t, nil, "serve", "--config", cfgPath, "--listen", "no-port")
	if res.code != exitUsage || !strings.Contains(res.stderr, "--listen") || !strings.Contains(res.stderr, "host:port") {
		t.Errorf("serve --listen no-port: %+v", res)
	}

	addr := freeAddr(t)
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, map[string]string{"RUNFLEET_LISTEN": addr}, "serve", "--config", cfgPath) }()
	waitHealthy(t, "http://"+addr+"/healthz", done)
	// serve stops on SIGINT as it would under a terminal or systemd.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.code != exitOK {
			t.Errorf("serve after SIGINT: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after SIGINT")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func waitHealthy(t *testing.T, url string, done <-chan cliResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case res := <-done:
			t.Fatalf("serve exited before answering %s: %+v", url, res)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200", url)
}
