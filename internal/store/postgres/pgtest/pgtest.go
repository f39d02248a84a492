// Package pgtest gives tests a real PostgreSQL server: Debian's postgresql
// package (on the project's machine image), started once per test binary
// from a fresh initdb in a temporary directory, on a free loopback port,
// and a fresh database for each test that asks.
//
// PostgreSQL refuses to run as root, and tests run as root in CI: the data
// directory is then owned by, and the server run as, the unprivileged
// `postgres` OS user (created with useradd when absent). A server that
// cannot start fails the test with the reason and the server's own output:
// nothing here ever skips.
//
// Programs other than tests (the chaos driver) use StartServer for a server
// of their own, which they may crash and restart.
//
// Use Main as the whole body of TestMain, so the server is stopped and its
// directory removed when the tests end; on Linux the kernel also kills it
// if the test binary dies first.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinDirEnv names a directory holding initdb and postgres, for a machine
// whose PostgreSQL is not where this package looks by itself.
const BinDirEnv = "RUNFLEET_POSTGRES_BIN"

var (
	serverOnce sync.Once
	shared     *server
	serverErr  error
)

// Main runs the package's tests, then stops the server if one was started.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// NewDatabase creates an empty database on the test server (starting the
// server on first use) and returns a DSN for it. The database is dropped
// when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	srv := serverFor(t)
	name := databaseName()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.admin(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE ends connections a test left open (a pool closed late).
		if err := srv.admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return srv.dsn(name)
}

// NewSchema creates an empty schema in one database the test binary
// shares and returns a DSN whose search_path is that schema alone, so
// unqualified tables are the test's own. It costs a few milliseconds where
// a database costs a quarter of a second, for suites that open a fresh
// store per subtest. What a schema does not separate: advisory locks and
// LISTEN/NOTIFY channels are per database. The schema is dropped when the
// test ends.
func NewSchema(t testing.TB) string {
	t.Helper()
	srv := serverFor(t)
	shared := sharedDatabase(t, srv)
	name := databaseName()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.exec(ctx, shared, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.exec(ctx, shared, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return srv.dsn(shared) + "&search_path=" + name
}

var (
	sharedOnce sync.Once
	sharedName string
	sharedErr  error
)

// sharedDatabase is the database NewSchema's schemas live in, made on
// first use and kept until the server stops.
func sharedDatabase(t testing.TB, srv *server) string {
	t.Helper()
	sharedOnce.Do(func() {
		sharedName = "schemas"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sharedErr = srv.exec(ctx, "postgres", "CREATE DATABASE "+sharedName+" TEMPLATE template0")
	})
	if sharedErr != nil {
		t.Fatalf("pgtest: create the shared database: %v", sharedErr)
	}
	return sharedName
}

// serverFor returns the process's server, starting it on first use.
func serverFor(t testing.TB) *server {
	t.Helper()
	serverOnce.Do(func() { shared, serverErr = startServer() })
	if serverErr != nil {
		t.Fatalf("pgtest: no PostgreSQL server for the tests: %v", serverErr)
	}
	return shared
}

// databaseName is random, so tests in one binary never share a database.
func databaseName() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return "t_" + hex.EncodeToString(b[:])
}

// admin runs one statement as the superuser on the maintenance database.
// CREATE and DROP DATABASE cannot run in a transaction, so each gets a
// connection of its own; they are a handful per test.
func (s *server) admin(ctx context.Context, sql string) error {
	return s.exec(ctx, "postgres", sql)
}

// exec runs one statement as the superuser on database.
func (s *server) exec(ctx context.Context, database, sql string) error {
	conn, err := pgx.Connect(ctx, s.dsn(database))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// dsn is a URL for database on the server, as the superuser (trust
// authentication: the server listens on loopback only, for this process).
func (s *server) dsn(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, strings.ToLower(database))
}
