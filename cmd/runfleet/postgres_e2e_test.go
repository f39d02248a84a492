package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// postgresConfig is the e2e config on a PostgreSQL store, its DSN read
// from RUNFLEET_PG_DSN as an operator's would be.
func postgresConfig(t *testing.T, dsn string) *config.Config {
	t.Helper()
	data := strings.ReplaceAll(testConfigYAML, "  dir: STORE_DIR\n", "  kind: postgres\n  dsn_env: RUNFLEET_PG_DSN\n")
	env := map[string]string{"E2E_WEBHOOK_SECRET": testSecret, "E2E_API_TOKEN": testAPIToken, "RUNFLEET_PG_DSN": dsn}
	cfg, err := config.Parse([]byte(data), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	return cfg
}

// One serve on PostgreSQL runs a job's runner from webhook to deletion:
// store, queue and outbox all in the database.
func TestServeOnPostgres(t *testing.T) {
	srv := startServeConfig(t, postgresConfig(t, pgtest.NewSchema(t)), false)
	if !strings.Contains(srv.logs.String(), "postgres:127.0.0.1:") {
		t.Errorf("the start line does not name the postgres store:\n%s", srv.logs)
	}
	res := sendPayload(t, srv.url+"/webhook", "queued.json", "")
	if res.StatusCode != http.StatusOK || res.Reply == nil || res.Reply.Result != "instance_created" {
		t.Fatalf("queued webhook: %d %s", res.StatusCode, res.Body)
	}
	srv.waitStatus(t, linuxInstance, runner.StatusRunning)
	res = sendPayload(t, srv.url+"/webhook", "completed.json", "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("completed webhook: %d %s", res.StatusCode, res.Body)
	}
	srv.waitStatus(t, linuxInstance, runner.StatusDeleted)
}

// A webhook answered 2xx is in the database: a serve stopped before any
// worker ran leaves it to the next, which finishes the job.
func TestServeOnPostgresKeepsAcceptedWork(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	first := startServeConfig(t, postgresConfig(t, dsn), true)
	res := sendPayload(t, first.url+"/webhook", "queued.json", "")
	if res.StatusCode != http.StatusOK || res.Reply == nil || res.Reply.Result != "instance_created" {
		t.Fatalf("queued webhook: %d %s", res.StatusCode, res.Body)
	}
	first.stop()

	second := startServeConfig(t, postgresConfig(t, dsn), false)
	second.waitStatus(t, linuxInstance, runner.StatusRunning)
}
