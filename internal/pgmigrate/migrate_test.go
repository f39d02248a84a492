package pgmigrate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runfleet/runfleet/internal/pgmigrate"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.NewSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var steps = []pgmigrate.Migration{
	{Version: 1, Name: "things", SQL: "CREATE TABLE things (id int PRIMARY KEY)"},
	{Version: 2, Name: "things.name", SQL: "ALTER TABLE things ADD COLUMN name text"},
}

func TestAppliesOnceInOrder(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	if at, err := pgmigrate.Apply(ctx, pool, "c", steps[:1]); err != nil || at != 1 {
		t.Fatalf("Apply(1 step) = %d, %v", at, err)
	}
	// The next binary brings one more step; the first is not run again
	// (it would fail: the table exists).
	if at, err := pgmigrate.Apply(ctx, pool, "c", steps); err != nil || at != 2 {
		t.Fatalf("Apply(2 steps) = %d, %v", at, err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO things (id, name) VALUES (1, 'x')"); err != nil {
		t.Fatalf("the migrated table lacks what step 2 added: %v", err)
	}
	if v, err := pgmigrate.Version(ctx, pool, "c"); err != nil || v != 2 {
		t.Fatalf("Version = %d, %v; want 2", v, err)
	}
	if v, err := pgmigrate.Version(ctx, pool, "other"); err != nil || v != 0 {
		t.Fatalf("Version of a component never migrated = %d, %v; want 0", v, err)
	}
}

// A binary that knows fewer steps than the database has seen refuses to
// run, saying which versions and what to do.
func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	if _, err := pgmigrate.Apply(ctx, pool, "store", steps); err != nil {
		t.Fatal(err)
	}
	_, err := pgmigrate.Apply(ctx, pool, "store", steps[:1])
	var newer *pgmigrate.NewerSchemaError
	if !errors.As(err, &newer) || !errors.Is(err, pgmigrate.ErrNewerSchema) {
		t.Fatalf("Apply of an older step list = %v, want a *NewerSchemaError", err)
	}
	if newer.Stored != 2 || newer.Known != 1 || newer.Component != "store" {
		t.Fatalf("NewerSchemaError = %+v", newer)
	}
	if !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "up to 1") {
		t.Fatalf("error does not say the versions: %v", err)
	}
}

// A step that fails leaves the schema as it was: no table from the step
// before it in the same run, no history row.
func TestFailedStepChangesNothing(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	broken := append(steps[:1:1], pgmigrate.Migration{Version: 2, Name: "broken", SQL: "ALTER TABLE nowhere ADD COLUMN x int"})
	if _, err := pgmigrate.Apply(ctx, pool, "c", broken); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("Apply with a broken step = %v, want its error naming it", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('things') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("step 1 of a failed run was kept (exists %v, err %v)", exists, err)
	}
}

// Replicas starting together: every Apply succeeds and each step runs
// once.
func TestConcurrentApplies(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			_, err := pgmigrate.Apply(ctx, pool, "c", steps)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Apply: %v", err)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM runfleet_migrations WHERE component = 'c'").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("history rows = %d, %v; want 2", rows, err)
	}
}

func TestRefusesGaps(t *testing.T) {
	gappy := []pgmigrate.Migration{steps[1]}
	if _, err := pgmigrate.Apply(context.Background(), connect(t), "c", gappy); err == nil {
		t.Fatal("Apply accepted a list starting at version 2")
	}
}
