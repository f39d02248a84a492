// Package store is the port through which runfleet keeps instance state.
// Adapters (store/bolt for embedded mode, store/dynamodb for AWS) implement
// Store and must pass the one contract suite in store/storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Store keeps instances, per-pool capacity counters and webhook deliveries.
// Every write is conditional: nothing is ever overwritten blindly.
type Store interface {
	// CreateInstance writes inst if no instance with its name exists (live or
	// deleted-but-not-expired), and in the SAME atomic write reserves one of
	// its pool's maxRunners slots. It returns ErrAlreadyExists or ErrPoolFull
	// and writes nothing in either case. On success inst.Version is 1.
	CreateInstance(ctx context.Context, inst *runner.Instance, maxRunners int) error

	// UpdateInstance replaces the stored instance with next if, and only if,
	// the stored one still has status `from` and version next.Version. The
	// transition from -> next.Status must be legal (runner.CanTransition) or an
	// *runner.IllegalTransitionError is returned before anything is written.
	// On success next.Version is incremented. When next.Status is deleted the
	// pool's capacity slot is released in the same atomic write. A lost race
	// returns a *ConflictError: re-read and decide again, never overwrite.
	UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error

	// GetInstance returns ErrNotFound when there is no such instance.
	GetInstance(ctx context.Context, name string) (*runner.Instance, error)
	// ListInstancesByPool returns the pool's live instances.
	ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error)
	// ListLiveInstances returns every instance whose status is not deleted.
	ListLiveInstances(ctx context.Context) ([]*runner.Instance, error)
	// PoolUsage returns how many capacity slots the pool holds now.
	PoolUsage(ctx context.Context, pool string) (int, error)

	// MarkDelivery records a webhook delivery id until ttl passes. It returns
	// false, and writes nothing, if the id is already recorded and unexpired.
	MarkDelivery(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// ForgetDelivery removes a delivery mark, so a redelivery of a webhook
	// whose processing failed is processed again rather than dropped.
	ForgetDelivery(ctx context.Context, id string) error
}

var (
	// ErrNotFound: no instance by that name.
	ErrNotFound = errors.New("store: instance not found")
	// ErrAlreadyExists: an instance by that name exists already.
	ErrAlreadyExists = errors.New("store: instance already exists")
	// ErrPoolFull: the pool holds max_runners live instances already.
	ErrPoolFull = errors.New("store: pool is at max_runners")
	// ErrConflict is matched by every *ConflictError (errors.Is).
	ErrConflict = errors.New("store: conditional write lost a race")
)

// ConflictError reports a compare-and-set that found the instance changed
// (or gone) since it was read.
type ConflictError struct {
	Instance        string
	ExpectedStatus  runner.Status
	ExpectedVersion int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: instance %q is no longer %s at version %d", e.Instance, e.ExpectedStatus, e.ExpectedVersion)
}

// Is makes errors.Is(err, ErrConflict) true for every *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DeletedRetention is how long a deleted instance's record is kept: as long as
// GitHub may redeliver the queued webhook that made it (3 days on github.com,
// 7 on GHES), so a late redelivery can never create a second runner.
const DeletedRetention = 7 * 24 * time.Hour

// DeliveryRetention is how long a delivery id is remembered (GitHub's
// redelivery window on github.com).
const DeliveryRetention = 72 * time.Hour
