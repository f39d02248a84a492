package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	pgqueue "github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/store/postgres"
)

// File names under store.dir (kind bolt). The work queue lives in
// StateFile, so that an instance and its create message commit together
// (store.Outbox); QueueFile is where earlier versions kept it, and is no
// longer read.
const (
	StateFile = "state.db"
	QueueFile = "queue.db"
)

// state is where serve keeps its state, as store.kind chose it: the store,
// the work queue that follows it, and what the kind implies for the rest
// of the process. A store several replicas may share (PostgreSQL) is one
// more case in openState and nothing else in Run.
type state struct {
	store store.Store
	queue queue.Queue
	// deadLetters is queue's own count of the messages it set aside (the
	// health check and the metrics read it).
	deadLetters queue.DeadLetterer
	// purger removes expired records on every reconcile pass; nil when the
	// store expires them itself.
	purger store.Purger
	// soleOwner: this process alone may use the store (bolt's file lock),
	// so whatever is in flight at start has no worker (RecoverAtStart).
	soleOwner bool
	// where names the store in the start line.
	where string
	// close closes the queue, then the store.
	close func() error
}

// openState opens the store and queue of the kind store.kind names.
// config.Parse has refused unknown kinds; this build's are listed in
// config.StoreKinds, and each has its case here.
func openState(cfg *config.Config, log *slog.Logger) (*state, error) {
	switch cfg.Store.Kind {
	case config.StoreBolt:
		return openBolt(cfg, log)
	case config.StorePostgres:
		return openPostgres(cfg)
	default:
		return nil, &config.FieldError{Field: "store.kind",
			Problem: fmt.Sprintf("kind %q cannot be opened by this build (one of %s)", cfg.Store.Kind, strings.Join(config.StoreKinds, ", "))}
	}
}

// openBolt opens one bbolt file under store.dir holding the store and, in
// the same file (bolt.OpenWithQueue), the queue: an instance and its
// create message commit in one write. bbolt expires nothing by itself, so
// the store is also the purger; its file lock makes this process the
// store's only user.
func openBolt(cfg *config.Config, log *slog.Logger) (*state, error) {
	dir := cfg.Store.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("serve: create store.dir %s: %w", dir, err)
	}
	st, err := bolt.OpenWithQueue(filepath.Join(dir, StateFile), local.Options{
		MaxReceives:       cfg.Engine.MaxReceives,
		DefaultVisibility: cfg.Engine.VisibilityTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: open store (is another runfleet serving from %s?): %w", dir, err)
	}
	warnLegacyQueue(log, dir)
	return &state{
		store:       st,
		queue:       st.Queue(),
		deadLetters: st.Queue(),
		purger:      st,
		soleOwner:   true,
		where:       "bolt:" + filepath.Join(dir, StateFile),
		close:       st.Close,
	}, nil
}

// warnLegacyQueue tells the operator that a queue file from an earlier
// version is ignored: messages left in it are not delivered (the reconciler
// re-sends the creates and deletes of live instances), and it can go.
func warnLegacyQueue(log *slog.Logger, dir string) {
	path := filepath.Join(dir, QueueFile)
	if _, err := os.Stat(path); err == nil {
		log.Warn("ignoring queue file of an earlier runfleet: the queue now lives in "+StateFile+"; delete it once this version runs", "path", path)
	}
}

// postgresOpenTimeout bounds connecting and migrating at start: a
// database that does not answer is reported, not waited on forever.
const postgresOpenTimeout = 30 * time.Second

// openPostgres opens the store and, in the same database over the same
// pool (postgres.OpenWithQueue), the queue: an instance and its create
// message commit in one transaction. Other serve processes may share the
// database, so this one is not the sole owner: what was in flight at start
// may be another's live work, and is recovered by the reconciler's
// timeouts and the queue's visibility timeouts, not at start. The store
// purges nothing by itself, so it is the purger (replicas purging at once
// remove each row once).
func openPostgres(cfg *config.Config) (*state, error) {
	ctx, cancel := context.WithTimeout(context.Background(), postgresOpenTimeout)
	defer cancel()
	where := postgres.Where(cfg.Store.DSN)
	st, err := postgres.OpenWithQueue(ctx, cfg.Store.DSN, pgqueue.Options{
		MaxReceives:       cfg.Engine.MaxReceives,
		DefaultVisibility: cfg.Engine.VisibilityTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: open the postgres store %s (DSN from %s): %w", where, dsnSource(cfg), err)
	}
	return &state{
		store:       st,
		queue:       st.Queue(),
		deadLetters: st.Queue(),
		purger:      st,
		soleOwner:   false,
		where:       "postgres:" + where,
		close:       st.Close,
	}, nil
}

// dsnSource names where the DSN came from, for errors: the field and the
// variable or file, never the DSN.
func dsnSource(cfg *config.Config) string {
	if cfg.Store.DSNFile != "" {
		return "store.dsn_file " + cfg.Store.DSNFile
	}
	return "store.dsn_env " + cfg.Store.DSNEnv
}
