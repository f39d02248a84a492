package cacheagent

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/metadata"
)

// TestRun is `runfleet cache-agent` as a machine runs it: the CA made and
// written for the trust stores, HTTPS for the results host, the hook's
// socket, the job token traded at runfleet, GitHub's client through it.
func TestRun(t *testing.T) {
	w := newAgentWorld(t, nil, "", false)
	w.ledger["m-9"] = cache.MachineJob{Live: true, Repository: "org/app", Active: true}
	agentTok, err := w.agents.Mint("m-9", "linux", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := RunOptions{
		Config:    metadata.CacheAgentConfig{CacheURL: w.cacheURL, AgentToken: agentTok, ResultsHosts: []string{"localhost"}},
		Listener:  ln,
		Socket:    filepath.Join(dir, "agent.sock"),
		StateDir:  filepath.Join(dir, "state"),
		CAFile:    filepath.Join(dir, "runfleet-cache-agent.crt"),
		DNSServer: "127.0.0.1:9", // the pass-through is not used here
		Log:       w.logs.Logger(slog.LevelInfo),
	}
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	w.caFile, w.agentURL = opts.CAFile, "https://localhost:"+port+"/"

	runHook(t, opts.Socket, map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/feature", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	ws := t.TempDir()
	sum := cachetest.WriteData(t, ws, 1<<20)
	if r := w.run(ws, "save", "data", "k"); !saved(r) {
		t.Fatalf("save: %s\n%s", r.Stdout, w.logs.Tail(20))
	}
	cachetest.ClearData(t, ws)
	if r := w.run(ws, "restore", "data", "k"); matched(r) != "k" {
		t.Fatalf("restore: %s", r.Stdout)
	}
	if got, _ := cachetest.ReadData(t, ws); got != sum {
		t.Fatal("restored other bytes")
	}
}

// A restarted agent keeps the CA the machine trusts.
func TestCAKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	a, err := loadOrMakeCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadOrMakeCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PEM, b.PEM) {
		t.Fatal("a second start made a new CA")
	}
	if _, err := b.Leaf("results.example"); err != nil {
		t.Fatal(err)
	}
}
