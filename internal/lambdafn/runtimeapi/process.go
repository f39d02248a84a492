package runtimeapi

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// EnvRuntimeAPI is where Lambda tells a runtime its Runtime API is
// (host:port); aws-lambda-go's lambda.Start reads it and nothing else to
// find its invocations.
const EnvRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// Bootstrap is a function's executable and what it runs with.
type Bootstrap struct {
	// Path is the built bootstrap binary.
	Path string
	// Dir is its working directory ("" = a fresh temporary one). Lambda's
	// is /var/task; a test can give functions different views of the file
	// system through it.
	Dir string
	// Env is the whole environment of the process: nothing of the test's
	// own is inherited, so the function sees only what a test says it
	// would see on Lambda. EnvRuntimeAPI is added; setting it is an error.
	Env map[string]string
}

// Process is a running bootstrap.
type Process struct {
	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
	err    error
}

// Start runs b against s. The process is killed when the test ends; if it
// exits before, every invocation waiting on s fails.
func (s *Server) Start(t testing.TB, b Bootstrap) *Process {
	t.Helper()
	if _, ok := b.Env[EnvRuntimeAPI]; ok {
		t.Fatalf("runtimeapi: Bootstrap.Env sets %s; Start sets it to the server's address", EnvRuntimeAPI)
	}
	dir := b.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	env := make([]string, 0, len(b.Env)+1)
	for name, value := range b.Env {
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	env = append(env, EnvRuntimeAPI+"="+s.Addr())

	p := &Process{output: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(b.Path)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("runtimeapi: start %s: %v", b.Path, err)
	}
	go func() {
		err := p.cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		p.err = err
		close(p.exited)
		s.runtimeGone(fmt.Errorf("the bootstrap exited (%v)", err))
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("runtimeapi: %s did not end 10 s after SIGKILL", b.Path)
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", b.Path, p.Output())
		}
	})
	return p
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is how the process ended (an *exec.ExitError, or "exit status 0");
// read it after Exited is closed.
func (p *Process) ExitErr() error {
	<-p.exited
	return p.err
}

// Output is everything the process wrote to stdout and stderr so far —
// what Lambda would send to CloudWatch Logs.
func (p *Process) Output() string { return p.output.String() }

// syncBuffer is written by the process's output copiers and read by tests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Kill ends the process with SIGKILL, as Lambda ends a sandbox at its
// function's timeout: no handler returns, nothing is cleaned up.
func (p *Process) Kill() error { return p.cmd.Process.Kill() }
