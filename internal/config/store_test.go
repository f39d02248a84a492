package config_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A postgres store reads its DSN from the named variable or file, and
// never prints or logs it.
func TestPostgresDSNIsResolvedAndRedacted(t *testing.T) {
	const dsn = "postgres://runfleet:pa55-VALUE@db:5432/runfleet"
	e := defaultEnv()
	e.env["RUNFLEET_PG_DSN"] = dsn + "\n"
	cfg, err := parse(t, validYAML+"store:\n  kind: postgres\n  dsn_env: RUNFLEET_PG_DSN\n", e)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.DSN != dsn {
		t.Fatalf("Store.DSN = %q, want %q (one trailing newline trimmed)", cfg.Store.DSN, dsn)
	}
	if cfg.Store.Dir != "" {
		t.Fatalf("Store.Dir = %q: kind postgres gets no bolt directory by default", cfg.Store.Dir)
	}
	e.files["/run/secrets/pg"] = dsn
	fromFile, err := parse(t, validYAML+"store:\n  kind: postgres\n  dsn_file: /run/secrets/pg\n", e)
	if err != nil || fromFile.Store.DSN != dsn {
		t.Fatalf("dsn_file: %v, DSN %q", err, fromFile.Store.DSN)
	}

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", cfg, "store", cfg.Store)
	printed := fmt.Sprintf("%v %+v %v", cfg, cfg, cfg.Store)
	for _, out := range []string{logged.String(), printed} {
		if strings.Contains(out, "pa55-VALUE") {
			t.Errorf("the DSN's password is printed in:\n%s", out)
		}
		assertContains(t, out, "[redacted]")
	}
}
