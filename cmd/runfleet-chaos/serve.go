package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/serveproc"
)

// Bounds on one runfleet start and graceful stop.
const (
	healthyWithin = 20 * time.Second
	stopWithin    = 30 * time.Second
)

// serveRun is one `runfleet serve` process.
type serveRun struct {
	n       int // 1 for the first start, 2 after the first kill, …
	proc    *serveproc.Process
	log     string
	started time.Time
	// waitErr is how the process ended (set before proc's Exited closes).
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
	r := &serveRun{n: len(s.runs) + 1}
	r.log = filepath.Join(s.dir, fmt.Sprintf("serve-%d.log", r.n))
	s.runs = append(s.runs, r)
	s.mu.Unlock()

	logFile, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	r.proc, err = serveproc.Start(serveproc.Spec{
		Bin:    s.bin,
		Args:   []string{"--config", s.config, "--log-level", s.logLevel},
		Env:    s.env,
		Stdout: logFile,
		Stderr: logFile,
		OnExit: func(waitErr error) {
			r.waitErr = waitErr
			logFile.Close()
		},
	})
	if err != nil {
		logFile.Close()
		return nil, err
	}
	r.started = time.Now()
	s.mu.Lock()
	s.cur = r
	s.mu.Unlock()
	if err := r.proc.WaitHealthy(ctx, s.base, healthyWithin); err != nil {
		return r, fmt.Errorf("runfleet serve #%d: %w; its log: %s", r.n, err, r.log)
	}
	return r, nil
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
	return r, r.proc.Kill()
}

// stop sends SIGTERM and waits for a graceful exit; a process still there
// after stopWithin is killed and the stop reported as failed.
func (s *server) stop() error {
	r := s.current()
	if r == nil {
		return nil
	}
	s.mu.Lock()
	r.stopping = true
	s.mu.Unlock()
	if err := r.proc.Stop(stopWithin); err != nil {
		return fmt.Errorf("runfleet serve #%d: %w (log: %s)", r.n, err, r.log)
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
		case <-r.proc.Exited():
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
