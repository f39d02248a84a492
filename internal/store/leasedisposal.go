package store

import (
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Lease names with these prefixes are taken once and never again: each
// names one process life (a serve replica's liveness) or one machine (the
// cache scope bound to its job). Once such a lease has lapsed nobody will
// hold it again, so its record is only history, and a fleet that starts a
// machine per job would otherwise keep one row per job forever.
const (
	// LivenessLeasePrefix starts a serve replica life's liveness lease
	// (leader.LivenessLease).
	LivenessLeasePrefix = "replica/"
	// CacheJobLeasePrefix starts a machine's cache-scope binding (the
	// first job description its cache agent presented).
	CacheJobLeasePrefix = "cache-job/"
)

// DisposableLeaseGrace is how long a lapsed once-only lease is kept before
// it may be removed. Longer than any holder's TTL and clock skew: a lease
// is removed only when every reader has long since seen it expired, so
// reading it as never written (free, version 0) decides the same.
const DisposableLeaseGrace = time.Hour

// disposableLeasePrefixes are the once-only lease names' prefixes.
var disposableLeasePrefixes = []string{LivenessLeasePrefix, CacheJobLeasePrefix}

// DisposableLeasePrefixes returns the prefixes of once-only lease names,
// for an adapter that lists them.
func DisposableLeasePrefixes() []string {
	return append([]string(nil), disposableLeasePrefixes...)
}

// LeaseRemovableAt is when l's record may be removed, as seen at now:
// DisposableLeaseGrace after it lapsed, or now once released, for a
// once-only lease; the zero time for every other lease, whose record stays
// (a fixed-name lease, such as the reconciler's, keeps its version
// growing, so that a version a stale holder remembers can never come round
// again). A released once-only lease reads as a removed one does — free,
// with no holder to renew it — so it may go at once.
func LeaseRemovableAt(l *runner.Lease, now time.Time) time.Time {
	switch {
	case l == nil || l.Version == 0 || !disposableLease(l.Name):
		return time.Time{}
	case l.Holder == "" || l.ExpiresAt.IsZero():
		return now
	}
	return l.ExpiresAt.Add(DisposableLeaseGrace)
}

// LeaseRemovable says whether l's record may be removed at now.
func LeaseRemovable(l *runner.Lease, now time.Time) bool {
	at := LeaseRemovableAt(l, now)
	return !at.IsZero() && !now.Before(at)
}

func disposableLease(name string) bool {
	for _, p := range disposableLeasePrefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}
