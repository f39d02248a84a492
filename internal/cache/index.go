package cache

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// index is the in-memory entry index every store keeps beside its bytes
// (rebuilt from the store's own meta records when it opens): the rules —
// first writer wins, matching, eviction — run on it, the same for every
// store. Methods named ...Locked need mu held.
type index struct {
	mu      sync.Mutex
	entries map[int64]*Entry
	byRef   map[Ref]int64
	// clock is the store's time source, for last access.
	clock func() time.Time
}

func newIndex(now func() time.Time) index {
	return index{entries: map[int64]*Entry{}, byRef: map[Ref]int64{}, clock: now}
}

// Lookup implements Store for every store: matching is the index's alone.
func (x *index) Lookup(_ context.Context, repoID int64, scopes, keys []string, version string) (Entry, bool, error) {
	e, ok := x.lookup(repoID, scopes, keys, version, x.clock())
	return e, ok, nil
}

func (x *index) addLocked(e Entry) {
	x.entries[e.ID] = &e
	x.byRef[e.Ref] = e.ID
}

// admitLocked decides a reservation of ref at now: ErrExists while an
// entry holds it (Conflict), else the id of a stale reservation the new
// one replaces (0: none), which the caller removes.
func (x *index) admitLocked(ref Ref, now time.Time, pendingTTL time.Duration) (stale int64, err error) {
	id, ok := x.byRef[ref]
	if !ok {
		return 0, nil
	}
	if Conflict(*x.entries[id], now, pendingTTL) {
		return 0, ErrExists
	}
	return id, nil
}

// pendingLocked returns pending entry id or why it cannot take bytes.
func (x *index) pendingLocked(id int64) (*Entry, error) {
	e, ok := x.entries[id]
	switch {
	case !ok:
		return nil, ErrNotFound
	case e.Finalized:
		return nil, ErrNotPending
	}
	return e, nil
}

// pending is pendingLocked taking the lock.
func (x *index) pending(id int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, err := x.pendingLocked(id)
	return err
}

// finalizeLocked finalizes ref's pending entry once its committed archive
// is size bytes: read returns the entry's meta record and measures the
// archive it names (only called when some parts were committed), write
// persists the finalized record. The index changes only once write did.
func (x *index) finalizeLocked(ref Ref, size int64, now time.Time,
	read func(id int64) (diskMeta, error), measure func(id int64, m diskMeta) (int64, error), write func(diskMeta) error) (Entry, error) {
	id, ok := x.byRef[ref]
	if !ok {
		return Entry{}, ErrNotFound
	}
	e, err := x.pendingLocked(id)
	if err != nil {
		return Entry{}, err
	}
	m, err := read(id)
	if err != nil {
		return Entry{}, fmt.Errorf("cache: finalize: %w", err)
	}
	if len(m.Parts) == 0 {
		return Entry{}, &InvalidError{Field: "size_bytes", Reason: "nothing was uploaded"}
	}
	got, err := measure(id, m)
	if err != nil {
		return Entry{}, fmt.Errorf("cache: finalize: %w", err)
	}
	if got != size {
		return Entry{}, &InvalidError{Field: "size_bytes", Reason: fmt.Sprintf("%d, but %d bytes were uploaded", size, got)}
	}
	upd := *e
	upd.Size, upd.Finalized, upd.LastAccess = size, true, now
	m.Entry = upd
	if err := write(m); err != nil {
		return Entry{}, fmt.Errorf("cache: finalize: %w", err)
	}
	*e = upd
	return upd, nil
}

// finalized returns finalized entry id.
func (x *index) finalized(id int64) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[id]
	if !ok || !e.Finalized {
		return Entry{}, false
	}
	return *e, true
}

// lookup runs Match over repoID's entries and marks the match read at now.
// LastAccess lives in memory between writes of the meta records; a
// restart forgets recent reads, which only makes eviction earlier.
func (x *index) lookup(repoID int64, scopes, keys []string, version string, now time.Time) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var cands []Entry
	for _, e := range x.entries {
		if e.RepoID == repoID && e.Finalized {
			cands = append(cands, *e)
		}
	}
	e, ok := Match(cands, repoID, scopes, keys, version)
	if !ok {
		return Entry{}, false
	}
	x.entries[e.ID].LastAccess = now
	return *x.entries[e.ID], true
}

// forgetLocked drops entry id from the index and returns it.
func (x *index) forgetLocked(id int64) (Entry, bool) {
	e, ok := x.entries[id]
	if !ok {
		return Entry{}, false
	}
	delete(x.entries, id)
	if x.byRef[e.Ref] == id {
		delete(x.byRef, e.Ref)
	}
	return *e, true
}

// evict forgets what PlanEviction says must go at now and returns it, so
// the store deletes the bytes after the lock is released: a slow delete
// (an S3 round trip per object) never holds up lookups.
func (x *index) evict(now time.Time, p EvictionPolicy) ([]Entry, EvictStats) {
	x.mu.Lock()
	defer x.mu.Unlock()
	all := make([]Entry, 0, len(x.entries))
	for _, e := range x.entries {
		all = append(all, *e)
	}
	var gone []Entry
	var st EvictStats
	for _, id := range PlanEviction(all, now, p) {
		if e, ok := x.forgetLocked(id); ok {
			st.Entries++
			st.Bytes += e.Size
			gone = append(gone, e)
		}
	}
	return gone, st
}

// Stats implements Store for every store: the finalized entries.
func (x *index) Stats() StoreStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	var st StoreStats
	for _, e := range x.entries {
		if e.Finalized {
			st.Entries++
			st.Bytes += e.Size
		}
	}
	return st
}
