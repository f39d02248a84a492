package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/postgres"
)

// Issue #32: after each fault — a replica's kill -9, the database's
// restart — the driver follows every instance the fault left in creating
// or deleting until it moves on (another status, or gone), and the
// reconciler lease after a kill of its holder, reading the replicas'
// database directly.

// Bounds the run is checked against.
const (
	// maxHeldByFault: every instance a fault left in creating/deleting
	// moves on within this long of the fault; and the pool is never held
	// full longer than this while such an instance has not.
	maxHeldByFault = 30 * time.Second
	// trackFor: how long an instance is followed before it is reported
	// as not moved on.
	trackFor  = 3 * time.Minute
	trackPoll = 500 * time.Millisecond
)

// heldInstance is one instance a fault left in creating or deleting.
type heldInstance struct {
	name   string
	status runner.Status
	since  time.Time
	claim  string
	// takenAt: when a live replica took its claim over, or it moved on
	// (since the fault; <0 while neither). movedOnAt: when its status
	// moved on or it was gone.
	takenAt, movedOnAt time.Duration
}

// faultWatch is one fault and what it left.
type faultWatch struct {
	what string
	at   time.Time
	held []*heldInstance
	// leaseHeld: the killed replica held the reconciler lease;
	// leaseMoved is when another took it (<0: not seen).
	leaseHeld  bool
	leaseMoved time.Duration
	// leaseTTL is the reconciler lease's TTL (its stated bound).
	leaseTTL time.Duration
}

// faultTracker follows the faults of a replicas run.
type faultTracker struct {
	st         *postgres.Store
	maxRunners int
	leaseTTL   time.Duration

	mu      sync.Mutex
	watches []*faultWatch
	// fullSince is when the pool last became full while a held instance
	// had not moved on; fullLongest the longest such stretch.
	fullSince   time.Time
	fullLongest time.Duration
}

func newFaultTracker(ctx context.Context, dsn string, maxRunners int, leaseTTL time.Duration) (*faultTracker, error) {
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open the replicas' database to follow faults: %w", err)
	}
	return &faultTracker{st: st, maxRunners: maxRunners, leaseTTL: leaseTTL}, nil
}

func (t *faultTracker) close() { t.st.Close() }

// holderOfPID tells whether a claim names a holder of process pid: a
// holder id is <host>-<pid>-<random>[~<life>] (leader.HolderID).
func holderOfPID(pid int) func(claim string) bool {
	mark := fmt.Sprintf("-%d-", pid)
	return func(claim string) bool {
		i := strings.LastIndexByte(claim, '@')
		return i >= 0 && strings.Contains(claim[i:], mark)
	}
}

// listLive lists the live instances, trying again while the database is
// down.
func (t *faultTracker) listLive(ctx context.Context) ([]*runner.Instance, error) {
	for {
		live, err := t.st.ListLiveInstances(ctx)
		if err == nil || ctx.Err() != nil {
			return live, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(trackPoll):
		}
	}
}

// killed follows what the kill of process pid at at left: the instances
// its claims held, and the reconciler lease if it held it.
func (t *faultTracker) killed(ctx context.Context, what string, pid int, at time.Time) {
	w := &faultWatch{what: what, at: at, leaseMoved: -1, leaseTTL: t.leaseTTL}
	names := holderOfPID(pid)
	live, err := t.listLive(ctx)
	if err != nil {
		return
	}
	for _, in := range live {
		if (in.Status == runner.StatusCreating || in.Status == runner.StatusDeleting) && names(in.Claim) {
			w.held = append(w.held, &heldInstance{name: in.Name, status: in.Status, since: in.StatusChangedAt, claim: in.Claim, takenAt: -1, movedOnAt: -1})
		}
	}
	if l, err := t.st.GetLease(ctx, "reconciler"); err == nil && l.Holder != "" && names("@"+l.Holder) {
		w.leaseHeld = true
		go t.followLease(ctx, w, l.Holder)
	}
	t.add(w)
}

// dbRestarted follows what the database's crash at at left: every
// instance in creating or deleting since before the crash, read once the
// database is back.
func (t *faultTracker) dbRestarted(ctx context.Context, at time.Time) {
	w := &faultWatch{what: "PostgreSQL restart", at: at, leaseMoved: -1}
	live, err := t.listLive(ctx)
	if err != nil {
		return
	}
	for _, in := range live {
		if (in.Status == runner.StatusCreating || in.Status == runner.StatusDeleting) && in.StatusChangedAt.Before(at) {
			w.held = append(w.held, &heldInstance{name: in.Name, status: in.Status, since: in.StatusChangedAt, claim: in.Claim, takenAt: -1, movedOnAt: -1})
		}
	}
	t.add(w)
}

func (t *faultTracker) add(w *faultWatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watches = append(t.watches, w)
}

// followLease waits for the reconciler lease to be held by another than
// dead.
func (t *faultTracker) followLease(ctx context.Context, w *faultWatch, dead string) {
	for time.Since(w.at) < trackFor {
		l, err := t.st.GetLease(ctx, "reconciler")
		if err == nil && l.Holder != "" && l.Holder != dead && time.Now().Before(l.ExpiresAt) {
			t.mu.Lock()
			w.leaseMoved = time.Since(w.at)
			t.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// run polls the live instances until ctx ends: a held instance moved on
// when its status or status time changed or it is gone; the pool is full
// when its live instances reach max_runners.
func (t *faultTracker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(trackPoll):
		}
		live, err := t.st.ListLiveInstances(ctx)
		if err != nil {
			continue
		}
		t.observe(live, time.Now())
	}
}

func (t *faultTracker) observe(live []*runner.Instance, now time.Time) {
	byName := map[string]*runner.Instance{}
	for _, in := range live {
		byName[in.Name] = in
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	waiting := false
	for _, w := range t.watches {
		for _, h := range w.held {
			if h.movedOnAt >= 0 {
				continue
			}
			in, ok := byName[h.name]
			if !ok || in.Status != h.status || !in.StatusChangedAt.Equal(h.since) {
				h.movedOnAt = now.Sub(w.at)
				if h.takenAt < 0 {
					h.takenAt = h.movedOnAt
				}
				continue
			}
			if h.takenAt < 0 && in.Claim != h.claim {
				h.takenAt = now.Sub(w.at)
			}
			if h.takenAt < 0 {
				waiting = true
			}
		}
	}
	if waiting && len(live) >= t.maxRunners {
		if t.fullSince.IsZero() {
			t.fullSince = now
		}
		t.fullLongest = max(t.fullLongest, now.Sub(t.fullSince))
	} else {
		t.fullSince = time.Time{}
	}
}

// faultFigures is what the tracker found, for the report.
type faultFigures struct {
	watches     []faultWatch
	fullLongest time.Duration
}

func (t *faultTracker) figures() faultFigures {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := faultFigures{fullLongest: t.fullLongest}
	for _, w := range t.watches {
		c := *w
		c.held = slices.Clone(w.held)
		f.watches = append(f.watches, c)
	}
	return f
}

// movedOn lists every held instance's time to move on (trackFor+ for
// those that did not), in order.
func (f faultFigures) movedOn() []time.Duration {
	return f.times(func(h *heldInstance) time.Duration { return h.movedOnAt })
}

// takenOver lists every held instance's time until a live replica took
// it over (or it moved on), in order.
func (f faultFigures) takenOver() []time.Duration {
	return f.times(func(h *heldInstance) time.Duration { return h.takenAt })
}

func (f faultFigures) times(of func(*heldInstance) time.Duration) []time.Duration {
	var out []time.Duration
	for _, w := range f.watches {
		for _, h := range w.held {
			d := of(h)
			if d < 0 {
				d = trackFor
			}
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
