package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Two databases from one server are apart: a table made in one is not in
// the other.
func TestDatabasesAreApart(t *testing.T) {
	ctx := context.Background()
	a, b := connect(t, pgtest.NewDatabase(t)), connect(t, pgtest.NewDatabase(t))
	if _, err := a.Exec(ctx, "CREATE TABLE only_here (x int)"); err != nil {
		t.Fatal(err)
	}
	var found bool
	if err := b.QueryRow(ctx, "SELECT to_regclass('only_here') IS NOT NULL").Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Fatal("a table made in one test database is visible in another")
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Two schemas are apart in the same way, through the DSN's search_path.
func TestSchemasAreApart(t *testing.T) {
	ctx := context.Background()
	a, b := connect(t, pgtest.NewSchema(t)), connect(t, pgtest.NewSchema(t))
	if _, err := a.Exec(ctx, "CREATE TABLE only_here (x int)"); err != nil {
		t.Fatal(err)
	}
	var found bool
	if err := b.QueryRow(ctx, "SELECT to_regclass('only_here') IS NOT NULL").Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Fatal("a table made in one test schema is visible in another")
	}
}
