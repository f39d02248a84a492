// Package bolt is the embedded mode's store.Store: one bbolt file on local
// disk, fsynced on every commit, so it is the source of truth of a
// `runfleet serve` process. Its buckets mirror the DynamoDB single-table
// records (package dynamodb):
//
//	meta             the schema version, the installation id, each pool's
//	                 spot breaker (spot_breaker/<pool>, JSON runner.SpotBreaker)
//	                 and each shared GitHub budget (budget/<credential>,
//	                 JSON store.BudgetRecord)
//	instances        INSTANCE#<name>  JSON runner.Instance, deleted ones kept until ExpiresAt
//	pools            POOL#<name>      JSON {"live": n}, the max_runners counter
//	jobs             JOB#<id>#<attempt> JSON runner.Job, settled ones kept until ExpiresAt
//	live_instances   the sparse live index: "<pool>\x00<name>", so listing
//	                 live instances never walks deleted history
//	open_jobs        the sparse open-demand index: "<queued at><job key>" for
//	                 open and waiting jobs, oldest first
//	instance_expiry  "<expiry ms><name>" for deleted instances, and
//	job_expiry       "<expiry ms><job key>" for settled jobs, so PurgeExpired
//	                 reads only what is due
//	credentials      CREDENTIALS#<name>  a runner's JIT configuration (credentials.go), and
//	credential_expiry "<expiry ms><name>", so PurgeExpiredCredentials reads only what is due
//	leases           LEASE#<name>     JSON runner.Lease, one per name, released
//	                 ones kept (free) so their version never goes back
//
// and, opened with OpenWithQueue as `runfleet serve` does, the work queue's
// buckets (package local), so that an instance and its create message
// commit together.
//
// bbolt allows one writer at a time; every write runs in one read-write
// transaction, which makes each conditional write atomic with its checks.
// Concurrent writes share transactions (group commit, package boltcommit),
// so a burst pays one fsync per group rather than one per write.
package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bbolterrors "go.etcd.io/bbolt/errors"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/store"
)

var (
	bucketMeta           = []byte("meta")
	bucketInstances      = []byte("instances")
	bucketPools          = []byte("pools")
	bucketJobs           = []byte("jobs")
	bucketLiveInstances  = []byte("live_instances")
	bucketOpenJobs       = []byte("open_jobs")
	bucketInstanceExpiry = []byte("instance_expiry")
	bucketJobExpiry      = []byte("job_expiry")
	bucketLeases         = []byte("leases")

	allBuckets = [][]byte{
		bucketMeta, bucketInstances, bucketPools, bucketJobs,
		bucketLiveInstances, bucketOpenJobs, bucketInstanceExpiry, bucketJobExpiry,
		bucketLeases,
	}
)

// Store is a store.Store kept in one bbolt file.
type Store struct {
	// Leases are the generic lease operations over changeLease.
	store.Leases
	db      *bbolt.DB
	commits *boltcommit.Committer
	now     func() time.Time
}

var _ store.Store = (*Store)(nil)

type options struct {
	openTimeout time.Duration
	now         func() time.Time
	noSync      bool
}

// Option tunes Open.
type Option func(*options)

// WithOpenTimeout bounds how long Open waits for the file lock another
// process holds (default 1 s). Waiting forever would hang a second
// `runfleet serve` pointed at the same directory instead of telling the
// operator why it cannot start.
func WithOpenTimeout(d time.Duration) Option {
	return func(o *options) { o.openTimeout = d }
}

// WithClock replaces time.Now for expiry decisions, so retention can be
// tested without waiting for it.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithNoSync commits without fsync: a commit is in the OS page cache, not
// yet on the disk, when the write returns. That survives the death of the
// process, but not a power loss or a kernel crash, so `runfleet serve`
// never uses it: a webhook answered 2xx must find its work after either.
// It exists for the deterministic simulation (internal/sim), whose
// "crash" is a process death and which would otherwise spend its time in
// fsync.
func WithNoSync() Option {
	return func(o *options) { o.noSync = true }
}

// Open opens (creating if needed) the store file at path. Only one process
// may hold it at a time. A file of the previous layout is upgraded in
// place (see initSchema).
func Open(path string, opts ...Option) (*Store, error) {
	db, o, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, commits: boltcommit.New(db), now: o.now}
	s.Leases = s.leases()
	return s, nil
}

// openDB applies the options and opens the file with the store's schema.
func openDB(path string, opts []Option) (*bbolt.DB, options, error) {
	o := options{openTimeout: time.Second, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := openFile(path, o)
	return db, o, err
}

func openFile(path string, o options) (*bbolt.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("bolt: create directory for %s: %w", path, err)
	}
	// NoSync is false unless WithNoSync: every commit is fsynced before it
	// returns, because a webhook answered 2xx must find its instance after
	// a crash.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: o.openTimeout, NoSync: o.noSync})
	if err != nil {
		if errors.Is(err, bbolterrors.ErrTimeout) {
			return nil, fmt.Errorf("bolt: %s is locked by another process: %w", path, err)
		}
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt: prepare %s: %w", path, err)
	}
	return db, nil
}

// Close releases the file. The store must not be used afterwards.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("bolt: close: %w", err)
	}
	return nil
}

// errNoChange is what a write function returns when it decided, before
// writing anything, to write nothing. update rolls nothing back for it: the
// no-op costs no fsync and no re-run of the writes it shares a transaction
// with. Never return it after a Put or Delete.
var errNoChange = errors.New("bolt: no change")

// update runs fn in a read-write transaction and returns once it is durably
// committed. Every write of the store goes through here, so how commits
// reach the disk is decided in one place: concurrent calls share one
// transaction and one fsync (boltcommit).
//
// Because of that sharing, fn may run more than once and must be
// deterministic given tx: read the clock and anything else variable before
// calling update, assign (not accumulate) whatever fn reports back, and
// change nothing outside tx. A refusal decided before the first write is
// best returned as boltcommit.Unchanged(err), for the same reason as
// errNoChange.
func (s *Store) update(fn func(tx *bbolt.Tx) error) error {
	return s.commits.Update(func(tx *bbolt.Tx) error {
		err := fn(tx)
		if err == errNoChange {
			return boltcommit.Unchanged(err)
		}
		return err
	})
}

// CommitStats counts the store's write calls and the fsynced commits they
// cost, for benchmarks and tests.
func (s *Store) CommitStats() boltcommit.Stats {
	return s.commits.Stats()
}
