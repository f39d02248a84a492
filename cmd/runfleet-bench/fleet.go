package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// dsnEnv carries the replicas' database DSN, so it is in no file and on no
// command line.
const dsnEnv = "RUNFLEET_BENCH_PG_DSN"

// startFleet starts n `runfleet serve` replicas on one PostgreSQL
// database — a fresh schema in the database at dsn, so each fleet starts
// empty — sharing the webhook secret, the operator API token and one log
// watch. It returns the first replica, which stands for them all
// (child.members); stopFleet stops every one.
func startFleet(ctx context.Context, s settings, dir, name string, maxRunners, n int, dsn string) (*child, error) {
	schemaDSN, err := freshSchema(ctx, dsn, name)
	if err != nil {
		return nil, err
	}
	o := childOptions{
		store:  fmt.Sprintf("store: {kind: postgres, dsn_env: %s}", dsnEnv),
		engine: "reconcile_interval: 1h # only the pass at start: see the report",
		env:    []string{dsnEnv + "=" + schemaDSN},
		secret: randomHex(), token: randomHex(), logs: newLogWatch(),
	}
	var replicas []*child
	for i := range n {
		c, err := startChild(ctx, s, dir, fmt.Sprintf("%s-replica-%d", name, i+1), maxRunners, o)
		if err != nil {
			for _, r := range replicas {
				_ = r.stop()
			}
			return nil, err
		}
		replicas = append(replicas, c)
	}
	first := replicas[0]
	first.replicas = replicas
	return first, nil
}

// stopFleet stops every process behind c.
func stopFleet(c *child) error {
	var errs []error
	for _, m := range c.members() {
		errs = append(errs, m.stop())
	}
	return errors.Join(errs...)
}

// freshSchema creates an empty schema in the database at dsn and returns
// a DSN whose search_path is that schema alone: runfleet's migrations then
// make their tables there.
func freshSchema(ctx context.Context, dsn, name string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "bench_" + strings.ReplaceAll(name, "-", "_") + "_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", fmt.Errorf("postgres: create schema %s: %w", schema, err)
	}
	return withSearchPath(dsn, schema), nil
}

// withSearchPath adds search_path to a URL or keyword/value DSN.
func withSearchPath(dsn, schema string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
