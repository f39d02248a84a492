package runner

import (
	"errors"
	"fmt"
	"time"
)

// Lease is a named, expiring right to act alone: the reconciler of one of
// several `serve` replicas ("reconciler"), the listener of a runner scale
// set ("listener/<scale set>"), the writer of a shared GitHub budget
// ("budget/<credential>"). It is a record like an instance or a job — one
// per name, written by compare-and-set on Version — so the store gives it
// no machinery of its own.
//
// It lives in the domain, beside SpotBreaker, rather than in the store:
// who may take a lease, and when it is lost, is decided here once (Acquire,
// Renew, Release), and each store adapter only writes the outcome
// conditionally, so two adapters cannot disagree about it.
//
// Expiry compares the clock of whoever asks (the now given to Acquire and
// Renew) with ExpiresAt, which the holder's clock set: holders' clocks must
// agree within a margin well below the TTL, and a holder should stop acting
// a margin before ExpiresAt by its own clock.
type Lease struct {
	Name string `json:"name"`
	// Holder is who holds it ("" when free: never taken, or released).
	Holder    string    `json:"holder,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Version increases by one on every write (acquire, renew, release),
	// whoever makes it; 0 is a lease never written. A holder that still
	// sees the version it wrote knows nobody held the lease since.
	Version int64 `json:"version"`
}

var (
	// ErrLeaseHeld: another holder has the lease and it has not expired.
	// Try again once it may have (LeaseHeldError.ExpiresAt), or leave the
	// work to the holder.
	ErrLeaseHeld = errors.New("lease is held by another holder")
	// ErrLeaseLost: the lease is no longer the caller's as it last wrote
	// it (another took it, or it was released). Stop acting as its holder
	// at once; acquire it again to resume.
	ErrLeaseLost = errors.New("lease lost")
)

// LeaseHeldError is ErrLeaseHeld with who holds the lease, and until when.
type LeaseHeldError struct {
	Name, Holder string
	ExpiresAt    time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %q is held by %q until %s", e.Name, e.Holder, e.ExpiresAt.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// LeaseLostError is ErrLeaseLost with the holding that was lost.
type LeaseLostError struct {
	Name, Holder string
	Version      int64
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("lease %q: %q no longer holds it at version %d", e.Name, e.Holder, e.Version)
}

// Is makes errors.Is(err, ErrLeaseLost) true.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// HeldBy reports whether holder holds the lease at now.
func (l *Lease) HeldBy(holder string, now time.Time) bool {
	return l != nil && holder != "" && l.Holder == holder && now.Before(l.ExpiresAt)
}

// Free reports whether anyone may acquire the lease at now.
func (l *Lease) Free(now time.Time) bool {
	return l == nil || l.Holder == "" || !now.Before(l.ExpiresAt)
}

// Acquire returns the lease's next record when holder takes it at now for
// ttl: it must be free, or holder's already (then it is extended). It
// returns a *LeaseHeldError otherwise. The store writes the result at the
// next version, compare-and-set on l.Version.
func (l *Lease) Acquire(holder string, ttl time.Duration, now time.Time) (*Lease, error) {
	if holder == "" || ttl <= 0 {
		return nil, fmt.Errorf("lease %q: acquire needs a holder and a positive ttl", l.Name)
	}
	if !l.Free(now) && l.Holder != holder {
		return nil, &LeaseHeldError{Name: l.Name, Holder: l.Holder, ExpiresAt: l.ExpiresAt}
	}
	return &Lease{Name: l.Name, Holder: holder, ExpiresAt: now.Add(ttl), Version: l.Version}, nil
}

// Renew returns the lease's next record when held, as its holder last
// wrote it, extends it to now+ttl. Anything else — another holder, a
// release, or any write since held.Version — is a *LeaseLostError: a
// version that moved means someone else may have acted as holder. A lease
// that expired but that nobody took since is still renewed.
func (l *Lease) Renew(held *Lease, ttl time.Duration, now time.Time) (*Lease, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("lease %q: renew needs a positive ttl", l.Name)
	}
	if held.Holder == "" || l.Holder != held.Holder || l.Version != held.Version {
		return nil, &LeaseLostError{Name: l.Name, Holder: held.Holder, Version: held.Version}
	}
	return &Lease{Name: l.Name, Holder: held.Holder, ExpiresAt: now.Add(ttl), Version: l.Version}, nil
}

// Release returns the lease's next record, free, when held is still the
// stored holding; ok is false when it is not (it was lost already), and
// then nothing is to be written.
func (l *Lease) Release(held *Lease) (next *Lease, ok bool) {
	if held.Holder == "" || l.Holder != held.Holder || l.Version != held.Version {
		return nil, false
	}
	return &Lease{Name: l.Name, Version: l.Version}, true
}
