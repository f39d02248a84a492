package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Server is a PostgreSQL server for a program rather than a test — the
// chaos driver's replicas mode — which may be crashed and started again on
// the same data directory and port. Like the test server it runs Debian's
// binaries as the postgres user when this process is root, trusts every
// loopback connection and does not fsync: it survives its own crash (a
// commit the client saw is in the write-ahead log the OS holds) but not
// the machine's, so it is for throwaway runs only.
type Server struct {
	srv *server
	log *os.File

	mu   sync.Mutex
	down bool
}

// StartServer runs initdb into dir/data (dir is made if absent and must
// not hold a data directory yet) and starts the server on a free loopback
// port; its output goes to dir/postgres.log. The caller owns dir, which
// Stop leaves in place. When this process is root, dir's parents must be
// searchable by the postgres user (mode o+x).
func StartServer(dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		return nil, fmt.Errorf("pgtest: %s already holds a data directory", dir)
	}
	log, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	srv, err := initServer(dir, log)
	if err == nil {
		srv.crashSafe = true
		err = srv.startOnFreePort()
	}
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &Server{srv: srv, log: log}, nil
}

// DSN is a URL for database on the server, as the superuser.
func (s *Server) DSN(database string) string { return s.srv.dsn(database) }

// Port is the loopback port the server listens on, the same across
// restarts.
func (s *Server) Port() int { return s.srv.port }

// CreateDatabase creates an empty database.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	return s.srv.admin(ctx, "CREATE DATABASE "+name+" TEMPLATE template0")
}

// Kill crashes the server: an immediate shutdown, in which every
// connection is cut and nothing is checkpointed. It returns once the
// server has exited.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv.kill()
	s.down = true
}

// Restart starts a killed server again on the same data directory and
// port, and returns once it accepts connections (after replaying its
// write-ahead log).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return errors.New("pgtest: Restart of a server that was not killed")
	}
	if err := s.srv.start(); err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	s.down = false
	return nil
}

// Stop shuts the server down for good (immediate mode) and closes its log;
// the directory stays.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv.stop()
	s.down = true
	_ = s.log.Close()
}
