package pgtest

import (
	"context"
	"errors"
	"fmt"
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

// server is the postgres process this test binary started.
type server struct {
	dir    string // removed by stop
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	output *testenv.TailBuffer
	once   sync.Once
}

// startServer runs initdb into a new temporary directory and starts
// postgres on it.
func startServer() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "runfleet-pgtest-")
	if err != nil {
		return nil, err
	}
	data, err := prepareDataDir(dir, bin, owner)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for range startAttempts {
		srv, err := startPostgres(dir, data, bin, owner)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if !errors.Is(err, errExited) {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
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

// startPostgres starts the server on a free loopback port and waits until
// it accepts connections.
func startPostgres(dir, data, bin string, owner *osUser) (*server, error) {
	port, err := testenv.FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", data,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB")
	owner.runAs(cmd)
	srv := &server{dir: dir, port: port, cmd: cmd, exited: make(chan struct{}), output: &testenv.TailBuffer{Limit: 16 << 10}}
	cmd.Stdout, cmd.Stderr = srv.output, srv.output
	if err := startChild(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(srv.exited)
	}()
	if err := srv.waitReady(); err != nil {
		srv.kill()
		return nil, fmt.Errorf("postgres on 127.0.0.1:%d: %w; its output:\n%s", port, err, srv.output.String())
	}
	return srv, nil
}

// waitReady polls until the server accepts a connection. It runs once per
// test binary, at start only.
func (s *server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
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
// shared memory) and removes its directory.
func (s *server) stop() {
	s.once.Do(func() {
		s.kill()
		_ = os.RemoveAll(s.dir)
	})
}

func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
		return
	case <-time.After(10 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}
