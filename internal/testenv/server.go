package testenv

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

const (
	// startTimeout is generous: DynamoDB Local needs ~1.5 s alone, several
	// times that on two shared cores while other test binaries compile.
	startTimeout = 60 * time.Second
	// startAttempts covers another process taking the free port we picked
	// before our server bound it.
	startAttempts = 3
	outputTail    = 16 << 10
)

// serverSpec says how to run one kind of server on a given port.
type serverSpec struct {
	name    string
	command func(port int) (*exec.Cmd, error)
}

// server is a child process this test binary started and must stop.
type server struct {
	name     string
	endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	output   *TailBuffer
}

var (
	runningMu sync.Mutex
	running   []*server
)

// errExited reports that the server process ended while we waited for it.
var errExited = errors.New("server process exited")

func startServer(spec serverSpec) (*server, error) {
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		srv, err := startServerOnce(spec)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if !errors.Is(err, errExited) {
			break
		}
	}
	return nil, lastErr
}

func startServerOnce(spec serverSpec) (*server, error) {
	port, err := FreeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", spec.name, err)
	}
	cmd, err := spec.command(port)
	if err != nil {
		return nil, err
	}
	srv := &server{
		name:     spec.name,
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      cmd,
		exited:   make(chan struct{}),
		output:   &TailBuffer{Limit: outputTail},
	}
	cmd.Stdout = srv.output
	cmd.Stderr = srv.output
	if err := startChildProcess(cmd); err != nil {
		return nil, fmt.Errorf("testenv: start %s (%s): %w", spec.name, cmd.Path, err)
	}
	runningMu.Lock()
	running = append(running, srv)
	runningMu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(srv.exited)
	}()

	if err := srv.waitReady(startTimeout); err != nil {
		srv.stop()
		return nil, fmt.Errorf("testenv: %s on port %d: %w (%s); its last output:\n%s", spec.name, port, err, installHint, srv.output.String())
	}
	return srv, nil
}

// waitReady polls until the server answers HTTP at all: any status means it
// is listening and parsing requests. Polling is fine here: it runs once per
// process, at start-up only.
func (s *server) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exited:
			return errExited
		default:
		}
		resp, err := client.Get(s.endpoint + "/")
		if err == nil {
			_ = resp.Body.Close()
			select {
			case <-s.exited:
				// Someone else's server answered on our port.
				return errExited
			default:
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	runningMu.Lock()
	defer runningMu.Unlock()
	for i, other := range running {
		if other == s {
			running = append(running[:i], running[i+1:]...)
			break
		}
	}
}

// stopServers kills every server this process started. The servers hold
// only in-memory state, so there is nothing to shut down gracefully.
func stopServers() {
	runningMu.Lock()
	servers := append([]*server(nil), running...)
	runningMu.Unlock()
	for _, s := range servers {
		s.stop()
	}
}

// FreeLoopbackPort finds a TCP port free on 127.0.0.1 for a server a test
// starts.
func FreeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// TailBuffer keeps the last Limit bytes a process wrote, for error
// messages.
type TailBuffer struct {
	Limit int

	mu   sync.Mutex
	data []byte
}

func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	if over := len(b.data) - b.Limit; over > 0 {
		b.data = append(b.data[:0], b.data[over:]...)
	}
	return len(p), nil
}

func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.data)
}
