package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// statusKind drives the compare-and-set contract of a record kind with a
// status, so that instances and jobs are held to it by the same tests:
// a stale version, a wrong status and a missing record each lose with the
// kind's *store.ConflictError and write nothing.
type statusKind[R any, S ~string] struct {
	kind store.Kind
	// fresh returns a new record, not yet stored; create stores it.
	fresh  func() *R
	create func(t *testing.T, s store.Store, r *R)
	get    func(t *testing.T, s store.Store, key string) *R
	absent func(t *testing.T, s store.Store, key string)
	update func(s store.Store, from S, next *R) error
	// state is the record's key, status and version; at sets its version.
	state func(*R) (key string, status S, version int64)
	at    func(r *R, version int64) *R
	// clone copies a record, set changes its status, touch another field
	// (a same-status write).
	clone func(*R) *R
	set   func(r *R, status S)
	touch func(r *R)
	// forward is legal from the created status; wrongTo is legal from
	// wrongFrom, which the created record is not in.
	forward, wrongFrom, wrongTo S
	same                        func(t *testing.T, want, got *R)
	// move walks the stored record through statuses (mustMove).
	move func(t *testing.T, s store.Store, key string, statuses ...S) *R
	// path is a legal walk from the created status; toIllegal reaches a
	// status from which every status in illegal is refused; toFinal
	// reaches one from which nothing, not even the same status, is legal.
	path, toIllegal, illegal, toFinal []S
	// held checks what else the record holds (an instance's pool slot)
	// while it is live or once it is final.
	held func(t *testing.T, s store.Store, final bool)
}

// edit is a same-status write of r.
func (k statusKind[R, S]) edit(r *R) *R {
	next := k.clone(r)
	k.touch(next)
	return next
}

// with is a copy of r in status to, nothing else changed.
func (k statusKind[R, S]) with(r *R, to S) *R {
	next := k.clone(r)
	k.set(next, to)
	return next
}

func (k statusKind[R, S]) tests(prefix string) []contractTest {
	return []contractTest{
		{prefix + "/StaleVersionIsConflict", k.staleVersionIsConflict},
		{prefix + "/WrongStatusIsConflict", k.wrongStatusIsConflict},
		{prefix + "/MissingIsConflict", k.missingIsConflict},
		{prefix + "/IncrementsVersion", k.incrementsVersion},
		{prefix + "/IllegalTransitionWritesNothing", k.illegalTransitionWritesNothing},
	}
}

// Every write moves the version by one, in the caller's struct and the
// store.
func (k statusKind[R, S]) incrementsVersion(t *testing.T, s store.Store) {
	r := k.fresh()
	k.create(t, s, r)
	key, _, _ := k.state(r)
	last := k.move(t, s, key, k.path...)
	want := int64(len(k.path) + 1)
	if _, _, v := k.state(last); v != want {
		t.Fatalf("caller's Version after %d updates = %d, want %d", len(k.path), v, want)
	}
	got := k.get(t, s, key)
	if _, status, v := k.state(got); v != want || status != k.path[len(k.path)-1] {
		t.Fatalf("stored %s v%d, want %s v%d", status, v, k.path[len(k.path)-1], want)
	}
	k.same(t, last, got)
}

// A change the kind's table refuses is an *runner.IllegalTransitionError
// naming it, before anything is written; a final status refuses even a
// same-status write.
func (k statusKind[R, S]) illegalTransitionWritesNothing(t *testing.T, s store.Store) {
	r := k.fresh()
	k.create(t, s, r)
	key, _, _ := k.state(r)
	base := k.move(t, s, key, k.toIllegal...)
	_, from, version := k.state(base)
	for _, to := range k.illegal {
		next := k.with(base, to)
		k.requireIllegal(t, k.update(s, from, next), key, from, to)
		if _, _, v := k.state(next); v != version {
			t.Fatalf("refused update changed the caller's Version to %d", v)
		}
	}
	k.same(t, base, k.get(t, s, key))
	k.held(t, s, false)

	done := k.move(t, s, key, k.toFinal...)
	_, final, _ := k.state(done)
	k.requireIllegal(t, k.update(s, final, k.edit(done)), key, final, final)
	k.same(t, done, k.get(t, s, key))
	k.held(t, s, true)
}

func (k statusKind[R, S]) requireIllegal(t *testing.T, err error, key string, from, to S) {
	t.Helper()
	var ite *runner.IllegalTransitionError
	want := runner.IllegalTransitionError{Kind: string(k.kind), Name: key, From: string(from), To: string(to)}
	if !errors.As(err, &ite) || *ite != want {
		t.Fatalf("%s -> %s: got %v, want %+v", from, to, err, want)
	}
}

// Someone else writes a same-status update (status unchanged, version 2):
// a write from the version read before it loses, and leaves the caller's
// Version alone.
func (k statusKind[R, S]) staleVersionIsConflict(t *testing.T, s store.Store) {
	r := k.fresh()
	k.create(t, s, r)
	key, status, _ := k.state(r)
	stale := k.get(t, s, key)
	fresh := k.edit(stale)
	if err := k.update(s, status, fresh); err != nil {
		t.Fatal(err)
	}
	next := k.with(stale, k.forward)
	requireConflict(t, k.update(s, status, next), k.kind, key, status, 1)
	if _, _, v := k.state(next); v != 1 {
		t.Fatalf("failed update changed the caller's Version to %d", v)
	}
	k.same(t, fresh, k.get(t, s, key))
}

// Right version, but the caller believes another status, from which its
// write is legal: only the status check can refuse it.
func (k statusKind[R, S]) wrongStatusIsConflict(t *testing.T, s store.Store) {
	r := k.fresh()
	k.create(t, s, r)
	key, _, _ := k.state(r)
	requireConflict(t, k.update(s, k.wrongFrom, k.with(k.edit(r), k.wrongTo)), k.kind, key, k.wrongFrom, 1)
	k.same(t, r, k.get(t, s, key))
}

// A record gone since it was read is a conflict, not "not found": the
// caller re-reads and learns it is gone.
func (k statusKind[R, S]) missingIsConflict(t *testing.T, s store.Store) {
	ghost := k.at(k.fresh(), 1)
	key, status, _ := k.state(ghost)
	requireConflict(t, k.update(s, status, k.with(ghost, k.forward)), k.kind, key, status, 1)
	k.absent(t, s, key)
}

var instanceKind = statusKind[runner.Instance, runner.Status]{
	kind:   store.KindInstance,
	fresh:  func() *runner.Instance { return newInstance("p", 1) },
	create: func(t *testing.T, s store.Store, r *runner.Instance) { mustCreate(t, s, r, roomy) },
	get:    mustGet,
	absent: func(t *testing.T, s store.Store, name string) {
		requireNotFound(t, s, name)
		requireUsage(t, s, "p", 0)
	},
	update: func(s store.Store, from runner.Status, next *runner.Instance) error {
		return s.UpdateInstance(context.Background(), from, next)
	},
	state:     func(r *runner.Instance) (string, runner.Status, int64) { return r.Name, r.Status, r.Version },
	at:        func(r *runner.Instance, v int64) *runner.Instance { r.Version = v; return r },
	clone:     (*runner.Instance).Clone,
	set:       func(r *runner.Instance, to runner.Status) { r.Status = to },
	touch:     func(r *runner.Instance) { r.RunnerStatus = runner.RunnerInstalling },
	forward:   runner.StatusCreating,
	wrongFrom: runner.StatusRunning,
	wrongTo:   runner.StatusStopped,
	same:      requireSameInstance,
	move:      mustMove,
	path:      []runner.Status{runner.StatusCreating, runner.StatusRunning, runner.StatusStopped},
	illegal:   []runner.Status{runner.StatusRunning, runner.StatusDeleted, runner.Status("bogus")},
	toFinal:   pathToDeleted,
	held: func(t *testing.T, s store.Store, final bool) {
		if final {
			requireUsage(t, s, "p", 0)
		} else {
			requireUsage(t, s, "p", 1)
		}
	},
}

var jobKind = statusKind[runner.Job, runner.JobStatus]{
	kind:   store.KindJob,
	fresh:  func() *runner.Job { return newJob("p", 1) },
	create: mustCreateJob,
	get:    mustGetJob,
	absent: requireJobNotFound,
	update: func(s store.Store, from runner.JobStatus, next *runner.Job) error {
		return s.UpdateJob(context.Background(), from, next)
	},
	state:     func(r *runner.Job) (string, runner.JobStatus, int64) { return r.Key(), r.Status, r.Version },
	at:        func(r *runner.Job, v int64) *runner.Job { r.Version = v; return r },
	clone:     (*runner.Job).Clone,
	set:       func(r *runner.Job, to runner.JobStatus) { r.Status = to },
	touch:     func(r *runner.Job) { r.CheckedMade = 1 },
	forward:   runner.JobServed,
	wrongFrom: runner.JobWaiting,
	wrongTo:   runner.JobOpen,
	same:      requireSameJob,
	move:      mustMoveJob,
	path:      []runner.JobStatus{runner.JobWaiting, runner.JobOpen, runner.JobServed, runner.JobClosed},
	// Demand never reopens, and an unknown status is no status.
	toIllegal: []runner.JobStatus{runner.JobServed},
	illegal:   []runner.JobStatus{runner.JobOpen, runner.JobWaiting, runner.JobExpired, runner.JobStatus("bogus")},
	toFinal:   []runner.JobStatus{runner.JobClosed},
	held:      func(*testing.T, store.Store, bool) {},
}
