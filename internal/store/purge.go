package store

import "context"

// Purger is an optional store ability: removing the records whose time is
// over — deleted instances and settled jobs past DeletedRetention, runner
// credentials past their expiry. A store whose backend expires records by
// itself (DynamoDB's TTL) does not have it; a store that keeps them until
// told (bbolt) must, and whoever runs its reconciler calls both methods on
// every pass. Each reads only what is due, so its cost follows what
// expired, never the size of the history.
type Purger interface {
	// PurgeExpired removes deleted instances and settled jobs whose
	// retention has passed and returns how many records it removed.
	PurgeExpired(ctx context.Context) (int, error)
	// PurgeExpiredCredentials removes runner credentials past their expiry
	// and returns how many it removed.
	PurgeExpiredCredentials(ctx context.Context) (int, error)
}
