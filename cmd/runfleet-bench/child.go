package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/serveproc"
)

// benchPool is the served config's one pool; its labels and owner match
// examples/payloads/queued.json.
const benchPool = "bench"

// Environment variables that carry the secrets to the child, so they never
// appear in a file or on a command line.
const (
	secretEnv = "RUNFLEET_BENCH_WEBHOOK_SECRET"
	tokenEnv  = "RUNFLEET_BENCH_API_TOKEN"
)

// Bounds on the child's start and stop.
const (
	healthyWithin = 15 * time.Second
	stopWithin    = 30 * time.Second
)

// child is one `runfleet serve` process under test — or, with replicas,
// the first of several on one PostgreSQL database, which stands for them
// all: they share its secrets and its log watch.
type child struct {
	name   string
	proc   *serveproc.Process
	base   string // http://127.0.0.1:port
	secret []byte
	api    *httpapi.Client
	logs   *logWatch
	// replicas are every process of a fleet, this one first; nil for a
	// lone child.
	replicas []*child
}

// childOptions say how a child differs from the embedded default: its
// store's config line and the environment it needs, and what it shares
// with its fellow replicas. Zero values mean a lone embedded child.
type childOptions struct {
	store  string   // the config's store line; default the embedded store in the child's directory
	engine string   // more engine settings, one "key: value" line
	github string   // the config's github line; default the simulated GitHub
	pool   string   // more pool settings, one "key: value" line (the scale_set of a scale-set run)
	env    []string // more environment, e.g. the database DSN
	secret string   // the webhook secret; default a random one
	token  string   // the operator API token; default a random one
	logs   *logWatch
}

// members are the processes behind c: its replicas, or c alone.
func (c *child) members() []*child {
	if len(c.replicas) == 0 {
		return []*child{c}
	}
	return c.replicas
}

// startChild writes a config under dir/name and starts `bin serve` on a
// free loopback port, returning once /healthz answers 200.
func startChild(ctx context.Context, s settings, dir, name string, maxRunners int, o childOptions) (*child, error) {
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	port, err := serveproc.FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	if o.store == "" {
		o.store = fmt.Sprintf("store: {dir: %q}", filepath.Join(home, "data"))
	}
	if o.github == "" {
		o.github = "github: {simulated: true}"
	}
	if o.secret == "" {
		o.secret = randomHex()
	}
	if o.token == "" {
		o.token = randomHex()
	}
	if o.logs == nil {
		o.logs = newLogWatch()
	}
	config := fmt.Sprintf(`# written by runfleet-bench
controller_id: runfleet-bench
%s
webhook: {secret_env: %s}
server:
  listen: 127.0.0.1:%d
  api_token_env: %s
%s
engine:
  workers: %d
  %s
pools:
  - name: %s
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: %d
    %s
    provider:
      type: simulated  # no settings: zero latency, no failures
`, o.github, secretEnv, port, tokenEnv, o.store, s.workers, o.engine, benchPool, maxRunners, o.pool)
	configPath := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	secret, token := o.secret, o.token
	logFile, err := os.Create(filepath.Join(home, "serve.log"))
	if err != nil {
		return nil, err
	}

	// The child's stderr (its JSON log) goes through a pipe to the log
	// watch, which keeps a copy in serve.log; the pipe closes when the
	// child exits, and the watch has read everything before Exited.
	logs := o.logs
	pr, pw := io.Pipe()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		logs.consume(pr, logFile)
	}()
	proc, err := serveproc.Start(serveproc.Spec{
		Bin:    s.bin,
		Args:   []string{"--config", configPath},
		Env:    append(append(os.Environ(), secretEnv+"="+secret, tokenEnv+"="+token), o.env...),
		Stdout: logFile,
		Stderr: pw,
		OnExit: func(error) {
			pw.Close()
			<-logsDone
			logFile.Close()
		},
	})
	if err != nil {
		pw.Close()
		<-logsDone
		logFile.Close()
		return nil, err
	}
	c := &child{
		name:   name,
		proc:   proc,
		base:   fmt.Sprintf("http://127.0.0.1:%d", port),
		secret: []byte(secret),
		logs:   logs,
	}
	c.api, err = httpapi.NewClient(c.base, token, nil)
	if err != nil {
		c.stop()
		return nil, err
	}
	if err := c.waitHealthy(ctx); err != nil {
		c.stop()
		return nil, fmt.Errorf("%s: %w; its log: %s", name, err, filepath.Join(home, "serve.log"))
	}
	return c, nil
}

func (c *child) pid() int { return c.proc.PID() }

func (c *child) waitHealthy(ctx context.Context) error {
	return c.proc.WaitHealthy(ctx, c.base, healthyWithin)
}

// stop sends SIGTERM and waits for a graceful exit, killing the child only
// if it has not exited within stopWithin. A non-zero exit is an error.
func (c *child) stop() error {
	if err := c.proc.Stop(stopWithin); err != nil {
		return fmt.Errorf("%s: runfleet serve: %w", c.name, err)
	}
	return nil
}

func randomHex() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}
