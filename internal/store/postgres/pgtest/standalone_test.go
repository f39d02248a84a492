package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

// A server started outside the test machinery survives a crash: what was
// committed before Kill is there after Restart, on the same port.
func TestStandaloneServerRestartsOnItsDataAfterAKill(t *testing.T) {
	dir, err := os.MkdirTemp("", "pgtest-standalone-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	srv, err := pgtest.StartServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.CreateDatabase(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	port := srv.Port()
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, srv.DSN("kept"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE survivors (x int); INSERT INTO survivors VALUES (42)")

	srv.Kill()
	if _, err := pgx.Connect(ctx, srv.DSN("kept")); err == nil {
		t.Fatal("connected to a killed server")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Port() != port {
		t.Fatalf("restarted on port %d, want %d", srv.Port(), port)
	}
	conn, err := pgx.Connect(ctx, srv.DSN("kept"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, "SELECT x FROM survivors").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after the restart: %d, %v; want the row committed before the kill", x, err)
	}
	if err := srv.Restart(); err == nil {
		t.Error("Restart of a running server succeeded")
	}
}
