package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/runfleet/runfleet/internal/serveproc"
)

// fleet is the runfleet under test: one `runfleet serve` on its bbolt
// store, or replicas on one PostgreSQL database (-replicas).
type fleet interface {
	router
	// apiURL is where the operator and the machines reach runfleet.
	apiURL() string
	// unleash runs the planned kills (and database restart) and returns
	// once the last restart is done.
	unleash(ctx context.Context, log *slog.Logger, stderr io.Writer, send *senders, start time.Time) (chaosDone, error)
	// status says who is up, for the progress line.
	status() string
	stop() error
	crashes() []*serveRun
	logs() []string
}

// chaosDone is what the chaos did, for the report.
type chaosDone struct {
	kills []killRecord
	db    *dbRecord // nil: no database, or no restart
}

// setup is what every fleet is built from.
type setup struct {
	s              settings
	dir            string
	gh             *gitHub
	secret         string
	apiToken       string
	providerConfig string
}

// singleServer is today's chaos target: one serve on a bbolt store in the
// run's directory, killed and restarted on it, and the outage.
type singleServer struct {
	oneServer
	srv   *server
	kills []kill
}

func startSingleServer(ctx context.Context, u setup, kills []kill) (*singleServer, error) {
	port, err := serveproc.FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	appKey := filepath.Join(u.dir, appKeyFile)
	if err := os.WriteFile(appKey, u.gh.privateKeyPEM, 0o600); err != nil {
		return nil, err
	}
	var extraKeys []string
	for i, pem := range u.gh.extraKeysPEM {
		path := filepath.Join(u.dir, fmt.Sprintf("github-app-%d.pem", i+2))
		if err := os.WriteFile(path, pem, 0o600); err != nil {
			return nil, err
		}
		extraKeys = append(extraKeys, path)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := filepath.Join(u.dir, "runfleet.yaml")
	err = writeServeConfig(config, u.s, serveConfig{
		port: port, publicURL: base, githubURL: u.gh.baseURL(),
		appKey:      fmt.Sprintf("private_key_file: %q", appKey),
		extraApps:   extraAppsYAML(len(extraKeys), func(i int) string { return fmt.Sprintf("private_key_file: %q", extraKeys[i]) }),
		store:       fmt.Sprintf("{dir: %q}", filepath.Join(u.dir, "store")),
		providerBin: u.s.provider, providerConfig: u.providerConfig,
	})
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), secretEnv+"="+u.secret, apiTokenEnv+"="+u.apiToken)
	srv := newServer(u.s.bin, config, u.dir, u.s.logLevel, port, env)
	if _, err := srv.start(ctx); err != nil {
		return nil, err
	}
	return &singleServer{oneServer: oneServer{url: base + "/webhook"}, srv: srv, kills: kills}, nil
}

func (f *singleServer) apiURL() string { return f.srv.base }

func (f *singleServer) unleash(ctx context.Context, log *slog.Logger, stderr io.Writer, send *senders, start time.Time) (chaosDone, error) {
	kills, err := killOnSchedule(ctx, log, stderr, f.srv, send, f.kills, start)
	return chaosDone{kills: kills}, err
}

func (f *singleServer) status() string {
	if r := f.srv.current(); r != nil {
		return fmt.Sprintf("runfleet serve #%d", r.n)
	}
	return "runfleet serve not started"
}

func (f *singleServer) stop() error          { return f.srv.stop() }
func (f *singleServer) crashes() []*serveRun { return f.srv.crashes() }
func (f *singleServer) logs() []string       { return f.srv.logs() }
