package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// waitDelay is how long a finished or killed provider's output pipes may
// stay open (held by a process that escaped its process group) before
// runfleet stops waiting for them.
const waitDelay = 5 * time.Second

// run executes the provider once for c, feeding stdin (CreateInstance only),
// and returns its stdout when it exits 0. Any other outcome is a
// *providers.Error: a non-zero exit wraps *ExitError with stdout and stderr
// as the fault; a call cut short by ctx wraps ctx's error, the provider's
// whole process group having been killed first.
func (p *Provider) run(ctx context.Context, c call, stdin []byte) ([]byte, error) {
	subject := c.instance
	if subject == "" {
		subject = c.poolID
	}
	fail := func(fault string, err error) error {
		return &providers.Error{Op: string(c.command), Instance: subject, Fault: fault, Err: err}
	}

	cmd := exec.CommandContext(ctx, p.settings.Executable)
	cmd.Env = p.environment(c)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := &headBuffer{limit: maxStdoutBytes}
	stderr := &tailBuffer{limit: maxStderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	killProcessGroupOnCancel(cmd)
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err := runPinned(cmd)
	elapsed := time.Since(start)
	log := p.log.With("command", string(c.command), "instance", c.instance, "pool_id", c.poolID, "duration", elapsed)
	if stderr.buf != nil {
		log = log.With("stderr", lastBytes(strings.TrimSpace(string(stderr.Bytes())), maxFaultBytes))
	}

	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: the provider exited 0 but something it started kept
		// its output open; what it printed before exiting is its answer.
		log.Debug("provider call finished", "exit_code", 0)
	case ctx.Err() != nil:
		log.Warn("provider call killed", "error", ctx.Err())
		fault := fmt.Sprintf("killed after %s: the provider did not finish in time (%v)", elapsed.Round(time.Millisecond), ctx.Err())
		if out := faultText(stdout.buf.Bytes(), stderr.Bytes()); out != "" {
			fault += "\n" + out
		}
		return nil, fail(fault, fmt.Errorf("provider %s killed after %s: %w", c.command, elapsed.Round(time.Millisecond), ctx.Err()))
	case errors.As(err, &exitErr):
		code := exitErr.ExitCode()
		log.Debug("provider call failed", "exit_code", code)
		fault := faultText(stdout.buf.Bytes(), stderr.Bytes())
		if fault == "" {
			fault = (&ExitError{Code: code}).Error() + " without any output"
		}
		return nil, fail(fault, &ExitError{Code: code})
	default:
		return nil, fail("cannot run the provider "+p.settings.Executable+": "+err.Error(), err)
	}
	if stdout.truncated {
		return nil, fail(fmt.Sprintf("invalid output: more than %d bytes on stdout", maxStdoutBytes), ErrInvalidOutput)
	}
	return stdout.buf.Bytes(), nil
}

// runPinned runs cmd with the calling goroutine locked to its OS thread
// from start until the provider is reaped. Linux sends the provider's death
// signal (processAttributes) when the thread that started it exits, and
// the Go runtime ends a thread whenever a goroutine locked to it returns
// without unlocking; a thread held by this goroutine cannot end that way,
// so the provider is killed when runfleet dies and never before. Each call
// in flight holds one OS thread, a small cost beside its process.
func runPinned(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Run()
}
