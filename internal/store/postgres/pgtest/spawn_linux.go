package pgtest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux the kernel kills the server if the test binary dies without
// running Main (a timeout panic, SIGKILL). The parent-death signal fires
// when the thread that forked the child ends, so every child is forked
// from one goroutine locked to a thread that lives as long as the process.
var (
	spawnOnce sync.Once
	spawns    chan spawn
)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

func startChild(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawnOnce.Do(func() {
		spawns = make(chan spawn)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for s := range spawns {
				s.done <- s.cmd.Start()
			}
		}()
	})
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawns <- s
	return <-s.done
}
