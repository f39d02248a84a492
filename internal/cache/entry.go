package cache

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits the client itself enforces (npm @actions/cache checkKey and
// restoreCache): the service refuses the same inputs so a client that
// skipped them cannot store what GitHub would not.
const (
	MaxKeyLength  = 512
	MaxKeys       = 10 // primary key plus restore keys
	MaxVersionLen = 512
)

// Ref names one entry: the repository, the scope (a git ref) it was written
// to, its key and its version (the client's hash of paths and compression).
type Ref struct {
	RepoID  int64
	Scope   string
	Key     string
	Version string
}

// Entry is one cache entry as the store keeps it.
type Entry struct {
	Ref
	// ID is the store's number for the entry, the client's entry_id.
	ID int64
	// Size is the archive's size in bytes once finalized.
	Size int64
	// Created is when the entry was reserved; newest prefix match uses it.
	Created time.Time
	// LastAccess is the last reservation, finalize or download: eviction by
	// age counts from it, as GitHub's 7-day rule does.
	LastAccess time.Time
	// Finalized entries are visible to lookups; pending ones only block a
	// second writer until they are stale.
	Finalized bool
	// PartCount is how many objects a finalized archive kept in parts is
	// (parts.go), where the index records it (DynamoDB); 0: one object.
	PartCount int `json:"part_count,omitempty"`
}

// ErrInvalid is matched by every *InvalidError.
var ErrInvalid = errors.New("cache: invalid request")

// InvalidError is bad input: a key, version or scope the service refuses.
// Field and Reason are safe to show the caller and to log.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return "cache: invalid " + e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// ErrExists is returned when an entry already holds (repo, scope, key,
// version): GitHub's first-writer-wins rule.
var ErrExists = errors.New("cache: entry already exists")

// ErrNotFound is a lookup, upload or finalize of an entry the store does not
// hold (or no longer holds: evicted).
var ErrNotFound = errors.New("cache: entry not found")

// ErrNotPending is an upload to or finalize of an entry that is already
// finalized: its bytes never change once readers can see them.
var ErrNotPending = errors.New("cache: entry is already finalized")

// ValidateKey checks one key as the client does: not empty, at most
// MaxKeyLength characters, no comma (the action's input splits on them).
func ValidateKey(field, key string) error {
	switch {
	case key == "":
		return &InvalidError{Field: field, Reason: "empty"}
	case !utf8.ValidString(key):
		return &InvalidError{Field: field, Reason: "not valid UTF-8"}
	case utf8.RuneCountInString(key) > MaxKeyLength:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("longer than %d characters", MaxKeyLength)}
	case strings.ContainsRune(key, ','):
		return &InvalidError{Field: field, Reason: "contains a comma"}
	}
	return nil
}

// ValidateVersion checks a version: the client sends a hex SHA-256, but
// only its presence and a sane length matter to matching.
func ValidateVersion(version string) error {
	switch {
	case version == "":
		return &InvalidError{Field: "version", Reason: "empty"}
	case len(version) > MaxVersionLen || !utf8.ValidString(version):
		return &InvalidError{Field: "version", Reason: "too long or not UTF-8"}
	}
	return nil
}

// ValidateLookup checks a lookup's keys: the primary key and at most
// MaxKeys-1 restore keys, each a valid key.
func ValidateLookup(key string, restoreKeys []string, version string) error {
	if len(restoreKeys)+1 > MaxKeys {
		return &InvalidError{Field: "restore_keys", Reason: fmt.Sprintf("more than %d keys in all", MaxKeys)}
	}
	if err := ValidateKey("key", key); err != nil {
		return err
	}
	for _, k := range restoreKeys {
		if err := ValidateKey("restore_keys", k); err != nil {
			return err
		}
	}
	return ValidateVersion(version)
}

// Match picks the entry a lookup restores, as GitHub does: scope by scope
// in the order given (the job's ref, then the base branch, then the
// default branch), the keys in order (primary then restore keys), each key
// first exactly and then as a prefix, the newest prefix match winning. Only
// finalized entries of repoID and version count. ok is false on a miss.
func Match(entries []Entry, repoID int64, scopes []string, keys []string, version string) (Entry, bool) {
	for _, scope := range scopes {
		var inScope []Entry
		for _, e := range entries {
			if e.Finalized && e.RepoID == repoID && e.Scope == scope && e.Version == version {
				inScope = append(inScope, e)
			}
		}
		if len(inScope) == 0 {
			continue
		}
		// Newest first so the first prefix match is the newest; ties
		// (same instant) fall back to the higher id, the later reservation.
		sort.SliceStable(inScope, func(i, j int) bool {
			if !inScope[i].Created.Equal(inScope[j].Created) {
				return inScope[i].Created.After(inScope[j].Created)
			}
			return inScope[i].ID > inScope[j].ID
		})
		for _, key := range keys {
			for _, e := range inScope {
				if e.Key == key {
					return e, true
				}
			}
			for _, e := range inScope {
				if strings.HasPrefix(e.Key, key) {
					return e, true
				}
			}
		}
	}
	return Entry{}, false
}

// Conflict reports whether a new reservation of ref collides with existing:
// a finalized entry always does (first writer wins); a pending one does
// while its upload may still be under way (younger than pendingTTL), so a
// runner that died mid-upload does not block the key forever.
func Conflict(existing Entry, now time.Time, pendingTTL time.Duration) bool {
	if existing.Finalized {
		return true
	}
	return now.Sub(existing.Created) < pendingTTL
}

// EvictionPolicy bounds what the store keeps.
type EvictionPolicy struct {
	// MaxAge evicts an entry not accessed for this long (0: no age limit).
	MaxAge time.Duration
	// MaxBytes evicts least recently accessed entries until the total size
	// is at most this (0: no size limit).
	MaxBytes int64
	// PendingTTL evicts a reservation never finalized after this long.
	PendingTTL time.Duration
}

// PlanEviction returns the ids to evict from entries at now under p: stale
// pending reservations, entries older than MaxAge since last access, then
// the least recently accessed until the rest fits in MaxBytes.
func PlanEviction(entries []Entry, now time.Time, p EvictionPolicy) []int64 {
	var out []int64
	var keep []Entry
	for _, e := range entries {
		switch {
		case !e.Finalized && p.PendingTTL > 0 && now.Sub(e.Created) >= p.PendingTTL:
			out = append(out, e.ID)
		case e.Finalized && p.MaxAge > 0 && now.Sub(e.LastAccess) >= p.MaxAge:
			out = append(out, e.ID)
		default:
			keep = append(keep, e)
		}
	}
	if p.MaxBytes <= 0 {
		return out
	}
	var total int64
	for _, e := range keep {
		total += e.Size
	}
	// Least recently accessed first; pending reservations are never
	// evicted for size (their size is not known yet, their writer is busy).
	sort.SliceStable(keep, func(i, j int) bool {
		if !keep[i].LastAccess.Equal(keep[j].LastAccess) {
			return keep[i].LastAccess.Before(keep[j].LastAccess)
		}
		return keep[i].ID < keep[j].ID
	})
	for _, e := range keep {
		if total <= p.MaxBytes {
			break
		}
		if !e.Finalized {
			continue
		}
		out = append(out, e.ID)
		total -= e.Size
	}
	return out
}
