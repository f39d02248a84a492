package testenv

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux the kernel kills our servers if the test binary dies without
// running Main (timeout panic, SIGKILL, a crash). PR_SET_PDEATHSIG fires when
// the *thread* that forked the child exits, not the process, so every child
// is forked from one goroutine locked to a thread that lives as long as the
// process.
type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnerOnce   sync.Once
	spawnRequests chan spawnRequest
)

func startChildProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	spawnerOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go spawnFromLockedThread()
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnRequests <- req
	return <-req.done
}

func spawnFromLockedThread() {
	// Never unlocked and never returns, so the thread is never reused or
	// ended before the process itself.
	runtime.LockOSThread()
	for req := range spawnRequests {
		req.done <- req.cmd.Start()
	}
}
