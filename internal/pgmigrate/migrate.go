// Package pgmigrate brings a PostgreSQL schema up to date at start: each
// component (the store, the queue) lists its migrations in order, and
// Apply runs those the database has not seen, recording each in one table,
// runfleet_migrations. A database whose schema is newer than the binary
// knows is refused: an older replica must not write records whose layout
// it no longer understands.
package pgmigrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is one step of a component's schema. Versions start at 1 and
// have no gaps; a released migration is never edited, only followed.
type Migration struct {
	Version int
	// Name says what the step does, for the history table and errors.
	Name string
	SQL  string
}

// lockKey is the advisory lock every Apply takes, whichever component:
// replicas starting together migrate one after another, and the second
// finds the work done.
const lockKey = 0x72756e666c656574 // "runfleet"

const createTable = `
CREATE TABLE IF NOT EXISTS runfleet_migrations (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`

// ErrNewerSchema is matched by every *NewerSchemaError.
var ErrNewerSchema = errors.New("pgmigrate: the database's schema is newer than this runfleet")

// NewerSchemaError refuses a database a newer runfleet has migrated.
type NewerSchemaError struct {
	Component string
	Stored    int
	Known     int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("pgmigrate: the database's %s schema is at version %d, this runfleet knows versions up to %d: "+
		"run a runfleet at least as new as the one that migrated it", e.Component, e.Stored, e.Known)
}

// Is makes errors.Is(err, ErrNewerSchema) true.
func (e *NewerSchemaError) Is(target error) bool { return target == ErrNewerSchema }

// Apply runs component's migrations the database lacks, all in one
// transaction under the advisory lock, so a crash halfway leaves the
// schema as it was. It returns the version the schema is at.
func Apply(ctx context.Context, pool *pgxpool.Pool, component string, migrations []Migration) (int, error) {
	if err := check(component, migrations); err != nil {
		return 0, err
	}
	var at int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, createTable); err != nil {
			return fmt.Errorf("create runfleet_migrations: %w", err)
		}
		stored, err := storedVersion(ctx, tx, component)
		if err != nil {
			return err
		}
		known := len(migrations)
		if stored > known {
			return &NewerSchemaError{Component: component, Stored: stored, Known: known}
		}
		for _, m := range migrations[stored:] {
			if err := apply(ctx, tx, component, m); err != nil {
				return err
			}
		}
		at = known
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgmigrate: %s: %w", component, err)
	}
	return at, nil
}

// Version returns the version of component's schema in the database (0:
// none), without changing anything.
func Version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, component string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass('runfleet_migrations') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return 0, err
	}
	return storedVersion(ctx, q, component)
}

func storedVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, component string) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM runfleet_migrations WHERE component = $1", component).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}

func apply(ctx context.Context, tx pgx.Tx, component string, m Migration) error {
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
	}
	_, err := tx.Exec(ctx, "INSERT INTO runfleet_migrations (component, version, name) VALUES ($1, $2, $3)",
		component, m.Version, m.Name)
	return err
}

// check refuses a migration list with gaps: version i+1 at index i.
func check(component string, migrations []Migration) error {
	for i, m := range migrations {
		if m.Version != i+1 {
			return fmt.Errorf("pgmigrate: %s: migration %q has version %d at position %d (want %d)", component, m.Name, m.Version, i, i+1)
		}
	}
	return nil
}
