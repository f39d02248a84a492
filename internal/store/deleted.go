package store

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
)

// DeletedLister is an optional store ability: listing the deleted instances
// still kept (DeletedRetention), for an operator looking back. It is not
// part of Store because the live indexes cannot answer it: the store must
// walk its instance records, which embedded mode's bolt file does cheaply
// and DynamoDB could only do with a Scan of the whole table.
type DeletedLister interface {
	// ListDeletedInstances returns the deleted instances whose retention
	// has not passed, of one pool when pool != "", most recently deleted
	// first.
	ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error)
}
