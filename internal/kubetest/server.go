package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Server is etcd and kube-apiserver, running.
type Server struct {
	bin   Binaries
	dir   string
	token string

	etcdURL  string
	apiPort  int
	etcd     *exec.Cmd
	mu       sync.Mutex
	api      *exec.Cmd
	apiWaits chan error
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
)

// Shared returns this test process's server, starting it on first use. It
// fails the test (never skips) when the server cannot start. Stop it from
// TestMain with Main.
func Shared(t tb) *Server {
	t.Helper()
	once.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		t.Fatalf("%v", sharedErr)
	}
	return shared
}

// tb is what Shared needs of a *testing.T (kept small so TestMain
// helpers and benchmarks can pass theirs).
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Main runs a package's tests and stops the shared server afterwards, if
// one was started: call it from TestMain as os.Exit(kubetest.Main(m)).
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Start starts etcd and kube-apiserver in a temporary directory and waits
// until the API server is ready.
func Start() (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "runfleet-kube-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, token: randomHex(16)}
	if err := s.writeFiles(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startEtcd(); err != nil {
		s.Stop()
		return nil, err
	}
	s.apiPort, err = freePort()
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.StartAPIServer(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) writeFiles() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		"tokens.csv": []byte(s.token + ",admin,admin-uid,system:masters\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(s.dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) startEtcd() error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	s.etcdURL = "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	cmd := exec.Command(s.bin.Etcd,
		"--name=kubetest",
		"--data-dir="+filepath.Join(s.dir, "etcd"),
		"--listen-client-urls="+s.etcdURL, "--advertise-client-urls="+s.etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	)
	waits, err := s.launch(cmd, "etcd.log")
	if err != nil {
		return err
	}
	s.etcd = cmd
	return s.waitReady("etcd", s.etcdURL+"/health", waits, 30*time.Second, "etcd.log")
}

// StartAPIServer starts kube-apiserver (again, after StopAPIServer) on the
// same port and etcd, and waits for /readyz.
func (s *Server) StartAPIServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api != nil {
		return errors.New("kubetest: the API server is running")
	}
	cmd := exec.Command(s.bin.APIServer,
		"--etcd-servers="+s.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(s.apiPort),
		"--cert-dir="+filepath.Join(s.dir, "certs"),
		"--token-auth-file="+filepath.Join(s.dir, "tokens.csv"),
		"--service-account-key-file="+filepath.Join(s.dir, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(s.dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--watch-cache=false",
	)
	waits, err := s.launch(cmd, "kube-apiserver.log")
	if err != nil {
		return err
	}
	s.api, s.apiWaits = cmd, waits
	return s.waitReady("kube-apiserver", s.URL()+"/readyz", waits, 90*time.Second, "kube-apiserver.log")
}

// StopAPIServer stops kube-apiserver (etcd keeps the cluster's state), as
// an API server restart or outage does.
func (s *Server) StopAPIServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api == nil {
		return
	}
	stop(s.api, s.apiWaits)
	s.api, s.apiWaits = nil, nil
}

// Stop stops both servers (the API server first) and removes their files.
func (s *Server) Stop() {
	s.StopAPIServer()
	if s.etcd != nil {
		_ = s.etcd.Process.Kill()
		_, _ = s.etcd.Process.Wait()
		s.etcd = nil
	}
	_ = os.RemoveAll(s.dir)
}

func stop(cmd *exec.Cmd, waits chan error) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-waits:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-waits
	}
}

func (s *Server) launch(cmd *exec.Cmd, logName string) (chan error, error) {
	f, err := os.OpenFile(filepath.Join(s.dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("kubetest: start %s: %w", cmd.Path, err)
	}
	waits := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		waits <- err
		close(waits)
	}()
	return waits, nil
}

func (s *Server) waitReady(name, url string, waits chan error, limit time.Duration, logName string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test server's own self-signed certificate
	}}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-waits:
			return fmt.Errorf("kubetest: %s exited (%v):\n%s", name, err, s.tail(logName))
		default:
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kubetest: %s not ready after %s:\n%s", name, limit, s.tail(logName))
}

func (s *Server) tail(logName string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, logName))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// URL is the API server's address.
func (s *Server) URL() string { return "https://127.0.0.1:" + strconv.Itoa(s.apiPort) }

// Config is a client config with cluster-admin rights.
func (s *Server) Config() *rest.Config {
	return &rest.Config{
		Host:            s.URL(),
		BearerToken:     s.token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1000, Burst: 1000,
	}
}

// Client is a cluster-admin client.
func (s *Server) Client(t tb) k8s.Interface {
	t.Helper()
	c, err := k8s.NewForConfig(s.Config())
	if err != nil {
		t.Fatalf("kubetest: client: %v", err)
	}
	return c
}

// Kubeconfig writes a kubeconfig file for the admin user into dir and
// returns its path (for code that reads kubeconfig files, and kubectl).
func (s *Server) Kubeconfig(dir, namespace string) (string, error) {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: kubetest
  context: {cluster: kubetest, user: admin, namespace: %q}
current-context: kubetest
`, s.URL(), s.token, namespace)
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
