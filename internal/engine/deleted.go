package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// ErrDeletedNotListed: the store keeps deleted instances readable by name
// but cannot list them (it lacks store.DeletedLister: DynamoDB, where it
// would take a Scan of the table).
var ErrDeletedNotListed = errors.New("this store cannot list deleted instances; read one by name")

// ListDeletedInstances returns the deleted instances still kept
// (store.DeletedRetention), of one pool when pool != "", most recently
// deleted first; ErrDeletedNotListed when the store cannot list them.
func (lg *Ledger) ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	lister, ok := lg.store.(store.DeletedLister)
	if !ok {
		return nil, fmt.Errorf("list deleted instances: %w", ErrDeletedNotListed)
	}
	return lister.ListDeletedInstances(ctx, pool)
}
