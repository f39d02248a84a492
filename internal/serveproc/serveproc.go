// Package serveproc runs `runfleet serve` as a child process for the drivers
// that measure or break it from outside (cmd/runfleet-bench,
// cmd/runfleet-chaos): start, wait until /healthz answers, stop gracefully
// or kill -9. It owns no config: the caller writes one and says where.
package serveproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is one `runfleet serve` process.
type Process struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Spec says how to start one process.
type Spec struct {
	// Bin is the runfleet binary; Args follow "serve".
	Bin  string
	Args []string
	// Env is the child's whole environment (nil: this process's).
	Env []string
	// Stdout and Stderr receive the child's output (nil: discarded).
	Stdout, Stderr io.Writer
	// OnExit, when set, runs with cmd.Wait's result after the child
	// exited and before Exited is closed (to close its log file, say).
	OnExit func(waitErr error)
}

// Start starts the process. Not CommandContext: how a process ends is the
// driver's decision (a graceful stop or a kill -9), never a side effect of
// a context ending.
func Start(spec Spec) (*Process, error) {
	cmd := exec.Command(spec.Bin, append([]string{"serve"}, spec.Args...)...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = spec.Stdout, spec.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve (run `make runfleet` first?): %w", spec.Bin, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if spec.OnExit != nil {
			spec.OnExit(p.waitErr)
		}
		close(p.exited)
	}()
	return p, nil
}

// PID is the child's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitErr is cmd.Wait's result; read it only after Exited is closed.
func (p *Process) WaitErr() error { return p.waitErr }

// WaitHealthy polls base+"/healthz" until it answers 200, the process
// exits, or within has passed.
func (p *Process) WaitHealthy(ctx context.Context, base string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("runfleet serve exited before it was healthy: %v", p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("runfleet serve not healthy within %s", within)
		case <-tick.C:
		}
	}
}

// ErrKilledAfterTimeout is a graceful stop that did not finish in time.
var ErrKilledAfterTimeout = errors.New("did not stop in time after SIGTERM; killed")

// Stop sends SIGTERM and waits for the exit; a process still there after
// within is killed and ErrKilledAfterTimeout returned. An unclean exit is
// returned as the error.
func (p *Process) Stop(within time.Duration) error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%w (after %s)", ErrKilledAfterTimeout, within)
	}
}

// Kill ends the process with SIGKILL — no shutdown, no flush — and waits
// until it is gone.
func (p *Process) Kill() error {
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill -9 %d: %w", p.cmd.Process.Pid, err)
	}
	<-p.exited
	return nil
}

// FreeLoopbackPort asks the kernel for a free port. Another process could
// take it before the child binds it; the child then fails its start
// loudly, and never serves on someone else's port.
func FreeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
