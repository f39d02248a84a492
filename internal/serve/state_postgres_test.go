package serve

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testenv"
)

// TestMain stops the PostgreSQL server and the moto server (the cache's S3
// store) the tests start.
func TestMain(m *testing.M) { testenv.Main(m, pgtest.Stop) }

// Kind postgres opens the store and its queue in one database, not as the
// store's sole owner, purged by serve; the start line names the server and
// database, never the DSN's password.
func TestOpenStatePostgres(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	cfg := &config.Config{Store: config.Store{Kind: config.StorePostgres, DSNEnv: "RUNFLEET_PG_DSN", DSN: dsn},
		Engine: config.Engine{MaxReceives: 3, VisibilityTimeout: config.DefaultVisibilityTimeout}}
	st, err := openState(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if st.soleOwner || st.purger == nil || st.store == nil || st.queue == nil || st.deadLetters == nil {
		t.Errorf("postgres state %+v: want a shared store, its queue and its purger", st)
	}
	if !strings.HasPrefix(st.where, "postgres:127.0.0.1:") || strings.Contains(st.where, "@") {
		t.Errorf("where = %q, want the server and database only", st.where)
	}

	cfg.Store.DSN = "postgres://runfleet:hunter2-secret@127.0.0.1:1/runfleet?connect_timeout=2"
	_, err = openState(cfg, slog.New(slog.DiscardHandler))
	if err == nil || strings.Contains(err.Error(), "hunter2-secret") || !strings.Contains(err.Error(), "store.dsn_env RUNFLEET_PG_DSN") {
		t.Errorf("unreachable database: %v; want an error naming the DSN's source, without its password", err)
	}
}
