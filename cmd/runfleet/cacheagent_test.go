package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCacheAgentCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	getenv := func(string) string { return "" }
	if st := run(context.Background(), []string{"cache-agent", "--print-hook", "--socket", "/run/x.sock"}, getenv, &out, &errOut); st != exitOK ||
		!strings.Contains(out.String(), "--unix-socket '/run/x.sock'") || !strings.Contains(out.String(), "exit 0") {
		t.Fatalf("print-hook = %d\n%s%s", st, out.String(), errOut.String())
	}
	cfg := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(cfg, []byte(`{"cache_url":"https://rf","agent_token":"t","results_hosts":["a.example","b.example"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if st := run(context.Background(), []string{"cache-agent", "--config", cfg, "--print-hosts"}, getenv, &out, &errOut); st != exitOK || out.String() != "a.example\nb.example\n" {
		t.Fatalf("print-hosts = %d %q", st, out.String())
	}
	errOut.Reset()
	missing := filepath.Join(t.TempDir(), "none.json")
	if st := run(context.Background(), []string{"cache-agent", "--config", missing}, getenv, &out, &errOut); st != exitFailure || !strings.Contains(errOut.String(), "none.json") {
		t.Fatalf("a missing config = %d %s", st, errOut.String())
	}
}
