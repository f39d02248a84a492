package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/testenv"
)

const (
	// superuser is the role initdb creates; trust authentication, loopback
	// only.
	superuser = "postgres"
	// startTimeout is generous: the server is ready in about a second, but
	// two shared cores may be busy compiling other test binaries.
	startTimeout = 60 * time.Second
	// startAttempts covers another process taking the free port we picked
	// before the server bound it.
	startAttempts = 3
)

// server is a postgres process on one data directory and one port, which
// may be killed and started again there.
type server struct {
	dir   string // holds data; removed by stop when removeDir
	data  string
	bin   string
	owner *osUser
	port  int
	// log, when set, receives the server's output besides output.
	log       io.Writer
	removeDir bool
	// crashSafe keeps synchronous_commit on, so a commit the client saw
	// survives the process being killed. The tests' server never crashes
	// and trades it for speed; fsync stays off either way, since only the
	// process dies, never the machine's page cache.
	crashSafe bool
	output    *testenv.TailBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	once   sync.Once
}

// startServer runs initdb into a new temporary directory and starts
// postgres on it: the test binary's server.
func startServer() (*server, error) {
	dir, err := os.MkdirTemp("", "runfleet-pgtest-")
	if err != nil {
		return nil, err
	}
	srv, err := initServer(dir, nil)
	if err == nil {
		srv.removeDir = true
		err = srv.startOnFreePort()
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

// initServer finds the binaries and the user to run them as and runs
// initdb into dir/data; the server is not started.
func initServer(dir string, log io.Writer) (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	data, err := prepareDataDir(dir, bin, owner)
	if err != nil {
		return nil, err
	}
	return &server{dir: dir, data: data, bin: bin, owner: owner, log: log, output: &testenv.TailBuffer{Limit: 16 << 10}}, nil
}

// startOnFreePort starts the server on a free loopback port, trying
// another when the one picked was taken before the server bound it.
func (s *server) startOnFreePort() error {
	var lastErr error
	for range startAttempts {
		port, err := testenv.FreeLoopbackPort()
		if err != nil {
			return err
		}
		s.port = port
		if lastErr = s.start(); lastErr == nil || !errors.Is(lastErr, errExited) {
			return lastErr
		}
	}
	return lastErr
}

// prepareDataDir makes dir traversable by the server's user and runs
// initdb as that user into dir/data. Durability settings are the tests':
// no fsync anywhere.
func prepareDataDir(dir, bin string, owner *osUser) (string, error) {
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return "", err
	}
	if err := owner.own(data); err != nil {
		return "", fmt.Errorf("give %s to user %s: %w", data, owner.name, err)
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", superuser,
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	owner.runAs(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb as %s: %w\n%s", owner.name, err, out)
	}
	return data, nil
}

// errExited: the server process ended while we waited for it.
var errExited = errors.New("postgres exited")

// start starts postgres on the data directory and s.port and waits until
// it accepts connections. After a crash (kill) the server replays its
// write-ahead log first, as any PostgreSQL does after losing power.
func (s *server) start() error {
	synchronousCommit := "off"
	if s.crashSafe {
		synchronousCommit = "on"
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.data,
		"-c", "fsync=off", "-c", "synchronous_commit="+synchronousCommit, "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB")
	s.owner.runAs(cmd)
	var out io.Writer = s.output
	if s.log != nil {
		out = io.MultiWriter(s.output, s.log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := startChild(cmd); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := s.waitReady(exited); err != nil {
		s.kill()
		return fmt.Errorf("postgres on 127.0.0.1:%d: %w; its output:\n%s", s.port, err, s.output.String())
	}
	return nil
}

// waitReady polls until the server accepts a connection.
func (s *server) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return errExited
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the server down (immediate mode, which also releases its
// shared memory) and removes its directory if it made it.
func (s *server) stop() {
	s.once.Do(func() {
		s.kill()
		if s.removeDir {
			_ = os.RemoveAll(s.dir)
		}
	})
}

// kill is PostgreSQL's immediate shutdown (SIGQUIT): every backend ends at
// once, nothing is checkpointed, and the next start recovers from the
// write-ahead log as after a crash. A server still there after ten seconds
// gets SIGKILL.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
		return
	case <-time.After(10 * time.Second):
	}
	_ = cmd.Process.Kill()
	<-exited
}
