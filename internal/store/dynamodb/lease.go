package dynamodb

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// A lease is one LEASE#<name> item, written whole by the generic
// compare-and-set on its version. Released leases stay (free), so a
// lease's version only ever grows: deleting the item would let a version a
// stale holder remembers come round again. Once-only leases (a replica
// life's liveness, a machine's cache binding) are the exception: nobody
// takes one again, so their items carry a ttl (store.LeaseRemovableAt) and
// DynamoDB deletes them, as it does deleted instances. Only GetItem and a
// conditional PutItem are used, which every role that writes records may
// call already.
var leaseKind = documentKind[runner.Lease]{
	kind:        store.KindLease,
	prefix:      prefixLease,
	attr:        "lease",
	zero:        func(name string) *runner.Lease { return &runner.Lease{Name: name} },
	version:     func(l *runner.Lease) int64 { return l.Version },
	setVersion:  func(l *runner.Lease, v int64) { l.Version = v },
	removableAt: store.LeaseRemovableAt,
}

// maxLeaseConflicts bounds the re-reads after a lost compare-and-set. A
// lost race means another holder has just written, so the first re-read
// decides (usually ErrLeaseHeld); more means the lease is being written in
// a loop.
const maxLeaseConflicts = 4

// changeLease is store.ChangeLease: the kind's generic change (read,
// decide, compare-and-set, a lost race decided again). (bolt decides
// inside its transaction and needs no loop.)
func (s *Store) changeLease(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
	return leaseKind.change(ctx, s, name, maxLeaseConflicts, decide)
}
