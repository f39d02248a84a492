package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
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

// child is one `runfleet serve` process under test.
type child struct {
	name    string
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	secret  []byte
	api     *httpapi.Client
	logs    *logWatch
	exited  chan struct{}
	waitErr error
}

// startChild writes a config under dir/name and starts `bin serve` on a
// free loopback port, returning once /healthz answers 200.
func startChild(ctx context.Context, s settings, dir, name string, maxRunners int) (*child, error) {
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`# written by runfleet-bench
controller_id: runfleet-bench
github: {simulated: true}
webhook: {secret_env: %s}
server:
  listen: 127.0.0.1:%d
  api_token_env: %s
store: {dir: %q}
engine:
  workers: %d
pools:
  - name: %s
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: %d
    provider:
      type: simulated  # no settings: zero latency, no failures
`, secretEnv, port, tokenEnv, filepath.Join(home, "data"), s.workers, benchPool, maxRunners)
	configPath := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	secret, token := randomHex(), randomHex()
	logFile, err := os.Create(filepath.Join(home, "serve.log"))
	if err != nil {
		return nil, err
	}

	// Not CommandContext: the child must get SIGTERM and a clean stop, never
	// a kill because the driver's context ended.
	cmd := exec.Command(s.bin, "serve", "--config", configPath)
	cmd.Env = append(os.Environ(), secretEnv+"="+secret, tokenEnv+"="+token)
	cmd.Stdout = logFile
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s serve (run `make runfleet` first?): %w", s.bin, err)
	}
	c := &child{
		name:   name,
		cmd:    cmd,
		base:   fmt.Sprintf("http://127.0.0.1:%d", port),
		secret: []byte(secret),
		logs:   newLogWatch(),
		exited: make(chan struct{}),
	}
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		c.logs.consume(stderr, logFile)
	}()
	go func() {
		<-logsDone // Wait closes the pipe: read everything first
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.exited)
	}()
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

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthyWithin)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("runfleet serve exited before it was healthy: %v", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("runfleet serve not healthy within %s", healthyWithin)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and waits for a graceful exit, killing the child only
// if it has not exited within stopWithin. A non-zero exit is an error.
func (c *child) stop() error {
	select {
	case <-c.exited:
		return c.exitError()
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGTERM: %w", c.name, err)
	}
	select {
	case <-c.exited:
		return c.exitError()
	case <-time.After(stopWithin):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("%s: did not stop within %s of SIGTERM; killed", c.name, stopWithin)
	}
}

func (c *child) exitError() error {
	if c.waitErr != nil {
		return fmt.Errorf("%s: runfleet serve exited uncleanly: %w", c.name, c.waitErr)
	}
	return nil
}

// freeLoopbackPort asks the kernel for a free port. Another process could
// take it before the child binds it; the child would then fail its start
// loudly, never serve on someone else's port.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}
