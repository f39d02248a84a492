package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// recordKind is one kind of JSON record the store writes by
// compare-and-set: where its records live and what a compare-and-set
// compares. Instances, jobs, spot breakers, leases and budgets are all read,
// checked and written through it, so how a lost race is detected and
// reported is written once.
type recordKind[R any] struct {
	kind   store.Kind
	bucket []byte
	// prefix is put before the name inside the bucket, for kinds kept in
	// a shared bucket (spot breakers live in meta).
	prefix string
	// state is what a compare-and-set compares: the status ("" for kinds
	// without one) and the version.
	state func(*R) (status string, version int64)
	// zero is the record of a name never written, for kinds that read
	// one as a zero record rather than as not found.
	zero func(name string) *R
	// setVersion sets a record's version, for kinds written by change.
	setVersion func(*R, int64)
}

var (
	instanceKind = recordKind[runner.Instance]{
		kind: store.KindInstance, bucket: bucketInstances,
		state: func(r *runner.Instance) (string, int64) { return string(r.Status), r.Version },
	}
	jobKind = recordKind[runner.Job]{
		kind: store.KindJob, bucket: bucketJobs,
		state: func(r *runner.Job) (string, int64) { return string(r.Status), r.Version },
	}
	// A handful of small records per installation: the meta bucket holds
	// them, so they needed no bucket (nor schema change) of their own.
	spotBreakerKind = recordKind[runner.SpotBreaker]{
		kind: store.KindSpotBreaker, bucket: bucketMeta, prefix: "spot_breaker/",
		state: func(r *runner.SpotBreaker) (string, int64) { return "", r.Version },
		zero:  func(pool string) *runner.SpotBreaker { return &runner.SpotBreaker{Pool: pool} },
	}
	// Named cursors (the delivery log's position) are a handful too.
	cursorKind = recordKind[store.Cursor]{
		kind: store.KindCursor, bucket: bucketMeta, prefix: "cursor/",
		state: func(r *store.Cursor) (string, int64) { return "", r.Version },
		zero:  func(name string) *store.Cursor { return &store.Cursor{Name: name} },
	}
	leaseKind = recordKind[runner.Lease]{
		kind: store.KindLease, bucket: bucketLeases,
		state:      func(r *runner.Lease) (string, int64) { return "", r.Version },
		zero:       func(name string) *runner.Lease { return &runner.Lease{Name: name} },
		setVersion: func(r *runner.Lease, v int64) { r.Version = v },
	}
	// Shared GitHub budgets: one small record per credential, in meta
	// like the spot breakers.
	budgetKind = recordKind[store.BudgetRecord]{
		kind: store.KindBudget, bucket: bucketMeta, prefix: "budget/",
		state:      func(r *store.BudgetRecord) (string, int64) { return "", r.Version },
		zero:       func(credential string) *store.BudgetRecord { return &store.BudgetRecord{Credential: credential} },
		setVersion: func(r *store.BudgetRecord, v int64) { r.Version = v },
	}
)

func (k recordKind[R]) key(name string) []byte { return []byte(k.prefix + name) }

// read decodes the record name from b, its kind's bucket; nil if none.
func (k recordKind[R]) read(b *bbolt.Bucket, name string) (*R, error) {
	raw := b.Get(k.key(name))
	if raw == nil {
		return nil, nil
	}
	r := new(R)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("bolt: decode %s %q: %w", k.kind, name, err)
	}
	return r, nil
}

func (k recordKind[R]) get(tx *bbolt.Tx, name string) (*R, error) {
	return k.read(tx.Bucket(k.bucket), name)
}

// load reads the record name in a read-only transaction; nil if none.
func (k recordKind[R]) load(s *Store, name string) (*R, error) {
	var r *R
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		r, err = k.get(tx, name)
		return err
	})
	return r, err
}

// find is load for kinds with a zero record: a name never written reads
// as its zero record.
func (k recordKind[R]) find(ctx context.Context, s *Store, name string) (*R, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: %s %s: %w", k.kind, name, err)
	}
	r, err := k.load(s, name)
	if err != nil || r != nil {
		return r, err
	}
	return k.zero(name), nil
}

func (k recordKind[R]) put(tx *bbolt.Tx, name string, r *R) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("bolt: encode %s %q: %w", k.kind, name, err)
	}
	return tx.Bucket(k.bucket).Put(k.key(name), raw)
}

// check refuses, marked Unchanged, a write whose expectation the stored
// record (nil: none, or one that counts as none) does not meet.
func (k recordKind[R]) check(e store.Expectation, stored *R) error {
	var status string
	var version int64
	if stored != nil {
		status, version = k.state(stored)
	}
	if !e.Met(stored != nil, status, version) {
		return boltcommit.Unchanged(e.Conflict())
	}
	return nil
}

// compareAndSet writes next over the stored record if that still meets
// e: the whole write of kinds whose records carry no index entries.
func (k recordKind[R]) compareAndSet(tx *bbolt.Tx, e store.Expectation, next *R) error {
	stored, err := k.get(tx, e.Key)
	if err != nil {
		return err
	}
	if err := k.check(e, stored); err != nil {
		return err
	}
	return k.put(tx, e.Key, next)
}

// change reads the record name (its zero record when none is stored), lets
// decide make its next record (nil: nothing to write) and writes that at
// the next version by the kind's compare-and-set, all in one transaction,
// so no other writer comes between the read and the write and no race is
// ever lost. decide runs inside the transaction, possibly more than once
// (group commit retries a batch): it may only use what it is given. It
// returns what it wrote (nil when nothing).
func (k recordKind[R]) change(ctx context.Context, s *Store, name string, decide func(cur *R) (*R, error)) (*R, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: %s %s: %w", k.kind, name, err)
	}
	var written *R
	err := s.update(func(tx *bbolt.Tx) error {
		written = nil
		cur, err := k.get(tx, name)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = k.zero(name)
		}
		next, err := decide(cur)
		if err != nil {
			return boltcommit.Unchanged(err)
		}
		if next == nil {
			return errNoChange
		}
		_, version := k.state(cur)
		k.setVersion(next, version+1)
		if err := k.compareAndSet(tx, store.Expect(k.kind, name, "", version), next); err != nil {
			return err
		}
		written = next
		return nil
	})
	if errors.Is(err, errNoChange) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return written, nil
}
