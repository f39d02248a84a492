package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

// databaseName is the replicas' database on the run's server.
const databaseName = "runfleet"

// database is the run's own PostgreSQL server (Debian's binaries, as the
// tests use: internal/store/postgres/pgtest), its data and log in the
// run's directory, and the replicas' database on it.
type database struct {
	srv *pgtest.Server
	dsn string
}

func startDatabase(ctx context.Context, dir string) (*database, error) {
	srv, err := pgtest.StartServer(dir)
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL for the replicas (make postgres installs it): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := srv.CreateDatabase(ctx, databaseName); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("create the replicas' database: %w", err)
	}
	// connect_timeout: a replica reconnecting while the server restarts
	// waits a bounded time per try.
	return &database{srv: srv, dsn: srv.DSN(databaseName) + "&connect_timeout=5"}, nil
}

// kill is an immediate shutdown: every connection cut, nothing
// checkpointed; the restart replays the write-ahead log.
func (d *database) kill() { d.srv.Kill() }

// restart starts the server again on the same data directory and port.
func (d *database) restart() error { return d.srv.Restart() }

func (d *database) stop() { d.srv.Stop() }
