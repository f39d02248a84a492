package cacheagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/metadata"
)

// CALifetime is how long the machine's CA and certificate live: longer
// than any runner machine.
const CALifetime = 30 * 24 * time.Hour

// RunOptions configure Run, what `runfleet cache-agent` does.
type RunOptions struct {
	// Config is what metadata/cache-agent gave the machine at boot.
	Config metadata.CacheAgentConfig
	// Listener is the HTTPS listener (the results host's address in
	// /etc/hosts, port 443); Listen is used when it is nil.
	Listener net.Listener
	Listen   string
	// Socket is the job-started hook's Unix socket.
	Socket string
	// StateDir keeps the CA's key (0700); CAFile gets the CA certificate
	// for the trust stores.
	StateDir string
	CAFile   string
	// DNSServer is host:port of the DNS server for the pass-through
	// (default: SystemDNSServer).
	DNSServer string
	Log       *slog.Logger
	// Ready is called once both listeners are up and the CA is written.
	Ready func()
}

// Run serves the agent until ctx is done.
func Run(ctx context.Context, o RunOptions) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Config.CacheURL == "" || o.Config.AgentToken == "" || len(o.Config.ResultsHosts) == 0 {
		return errors.New("cacheagent: the configuration needs cache_url, agent_token and results_hosts")
	}
	ca, err := loadOrMakeCA(o.StateDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.CAFile, ca.PEM, 0o644); err != nil {
		return fmt.Errorf("cacheagent: write the CA certificate: %w", err)
	}
	leaf, err := ca.Leaf(o.Config.ResultsHosts...)
	if err != nil {
		return err
	}
	dns := o.DNSServer
	if dns == "" {
		if dns, err = SystemDNSServer(); err != nil {
			return err
		}
	}
	jobs := &JobTokens{
		URL:        strings.TrimRight(o.Config.CacheURL, "/") + cache.JobTokenPath,
		AgentToken: func() (string, error) { return o.Config.AgentToken, nil },
		Log:        o.Log,
	}
	agent, err := New(Options{
		CacheURL:  o.Config.CacheURL,
		Tokens:    jobs,
		PassHosts: o.Config.ResultsHosts,
		Upstream:  UpstreamTransport(&Resolver{Server: dns}, "443", nil),
		Log:       o.Log,
	})
	if err != nil {
		return err
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", o.Listen); err != nil {
			return fmt.Errorf("cacheagent: listen on %s: %w", o.Listen, err)
		}
	}
	_ = os.Remove(o.Socket)
	sock, err := net.Listen("unix", o.Socket)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("cacheagent: socket %s: %w", o.Socket, err)
	}
	// The runner's user runs the hook: it must reach the socket. One
	// registration is taken, before the job's first step.
	if err := os.Chmod(o.Socket, 0o666); err != nil {
		_ = ln.Close()
		_ = sock.Close()
		return err
	}
	tlsSrv := &http.Server{
		Handler:           agent,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug),
	}
	hookSrv := &http.Server{Handler: RegisterHandler(jobs, o.Log), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- tlsSrv.ServeTLS(ln, "", "") }()
	go func() { errc <- hookSrv.Serve(sock) }()
	o.Log.Info("cacheagent: serving", "addr", ln.Addr().String(), "hosts", o.Config.ResultsHosts, "cache", o.Config.CacheURL, "dns", dns)
	if o.Ready != nil {
		o.Ready()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = tlsSrv.Shutdown(sctx)
	_ = hookSrv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func loadOrMakeCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	if c, err := os.ReadFile(certPath); err == nil {
		k, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, fmt.Errorf("cacheagent: %w", err)
		}
		return LoadCA(c, k)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cacheagent: state dir: %w", err)
	}
	ca, err := NewCA(time.Now(), CALifetime)
	if err != nil {
		return nil, err
	}
	k, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, k, 0o600); err != nil {
		return nil, fmt.Errorf("cacheagent: %w", err)
	}
	if err := os.WriteFile(certPath, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("cacheagent: %w", err)
	}
	return ca, nil
}
