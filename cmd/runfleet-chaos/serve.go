package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Bounds on one runfleet start and graceful stop.
const (
	healthyWithin = 20 * time.Second
	stopWithin    = 30 * time.Second
)

// serveRun is one `runfleet serve` process.
type serveRun struct {
	n       int // 1 for the first start, 2 after the first kill, …
	cmd     *exec.Cmd
	log     string
	started time.Time
	exited  chan struct{}
	waitErr error
	// killed and stopping say the driver ended it; any other exit is a
	// crash the report names.
	killed, stopping bool
}

// server is the runfleet under test across its restarts: one config, one
// store directory, one loopback port.
type server struct {
	bin, config, dir string
	logLevel         string
	env              []string
	base             string

	mu   sync.Mutex
	cur  *serveRun
	runs []*serveRun
}

func newServer(bin, config, dir, logLevel string, port int, env []string) *server {
	return &server{bin: bin, config: config, dir: dir, logLevel: logLevel, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// start starts a new process and returns once /healthz answers 200.
func (s *server) start(ctx context.Context) (*serveRun, error) {
	s.mu.Lock()
	r := &serveRun{n: len(s.runs) + 1, exited: make(chan struct{})}
	r.log = filepath.Join(s.dir, fmt.Sprintf("serve-%d.log", r.n))
	s.runs = append(s.runs, r)
	s.mu.Unlock()

	logFile, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	// Not CommandContext: the driver decides how each process ends.
	r.cmd = exec.Command(s.bin, "serve", "--config", s.config, "--log-level", s.logLevel)
	r.cmd.Env = s.env
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s serve (run `make runfleet` first?): %w", s.bin, err)
	}
	r.started = time.Now()
	go func() {
		r.waitErr = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	s.mu.Lock()
	s.cur = r
	s.mu.Unlock()
	if err := s.waitHealthy(ctx, r); err != nil {
		return r, fmt.Errorf("runfleet serve #%d: %w; its log: %s", r.n, err, r.log)
	}
	return r, nil
}

func (s *server) waitHealthy(ctx context.Context, r *serveRun) error {
	ctx, cancel := context.WithTimeout(ctx, healthyWithin)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.exited:
			return fmt.Errorf("exited before it was healthy: %v", r.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %s", healthyWithin)
		case <-tick.C:
		}
	}
}

// kill ends the current process with SIGKILL — no shutdown, no flush —
// and waits until it is gone.
func (s *server) kill() (*serveRun, error) {
	r := s.current()
	if r == nil {
		return nil, errors.New("no runfleet process to kill")
	}
	s.mu.Lock()
	r.killed = true
	s.mu.Unlock()
	if err := syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return r, fmt.Errorf("kill -9 %d: %w", r.cmd.Process.Pid, err)
	}
	<-r.exited
	return r, nil
}

// stop sends SIGTERM and waits for a graceful exit; a process still there
// after stopWithin is killed and the stop reported as failed.
func (s *server) stop() error {
	r := s.current()
	if r == nil {
		return nil
	}
	select {
	case <-r.exited:
		return r.exitError()
	default:
	}
	s.mu.Lock()
	r.stopping = true
	s.mu.Unlock()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("runfleet serve #%d: SIGTERM: %w", r.n, err)
	}
	select {
	case <-r.exited:
		return r.exitError()
	case <-time.After(stopWithin):
		_ = r.cmd.Process.Kill()
		<-r.exited
		return fmt.Errorf("runfleet serve #%d did not stop within %s of SIGTERM; killed", r.n, stopWithin)
	}
}

func (r *serveRun) exitError() error {
	if r.waitErr != nil {
		return fmt.Errorf("runfleet serve #%d exited uncleanly: %w (log: %s)", r.n, r.waitErr, r.log)
	}
	return nil
}

func (s *server) current() *serveRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// crashes lists the processes that exited without the driver ending them.
func (s *server) crashes() []*serveRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*serveRun
	for _, r := range s.runs {
		select {
		case <-r.exited:
			if !r.killed && !r.stopping {
				out = append(out, r)
			}
		default:
		}
	}
	return out
}

func (s *server) logs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.runs))
	for i, r := range s.runs {
		out[i] = r.log
	}
	return out
}

// freeLoopbackPort asks the kernel for a free port. Every restart binds the
// same one; another process taking it meanwhile would make a start fail
// loudly, never talk to a stranger.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
