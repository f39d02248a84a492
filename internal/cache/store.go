package cache

import (
	"context"
	"io"
	"time"
)

// Store keeps entries and their bytes. Uploads follow Azure Blob's block
// semantics because that is what the client's SDK sends: either the whole
// blob in one PutBlob, or blocks staged in any order and concurrently and
// then committed as an ordered list. Implementations are safe for
// concurrent use and never hold a whole archive in memory.
type Store interface {
	// Reserve creates a pending entry for ref; ErrExists when a finalized
	// entry, or a pending one still being uploaded, holds it.
	Reserve(ctx context.Context, ref Ref) (Entry, error)
	// PutBlob stores the whole archive of pending entry id from r, size
	// bytes (the request's Content-Length; -1 when it had none), at most
	// limit, and returns how many it stored.
	PutBlob(ctx context.Context, id int64, r io.Reader, size, limit int64) (int64, error)
	// PutBlock stages one block of pending entry id, as PutBlob.
	PutBlock(ctx context.Context, id int64, blockID string, r io.Reader, size, limit int64) (int64, error)
	// CommitBlocks makes the staged blocks, in this order, the archive.
	CommitBlocks(ctx context.Context, id int64, blockIDs []string) error
	// Finalize makes the pending entry ref visible once its archive is
	// committed and is size bytes long.
	Finalize(ctx context.Context, ref Ref, size int64) (Entry, error)
	// Lookup finds the entry Match picks among repoID's finalized entries
	// and marks it accessed; ok is false on a miss.
	Lookup(ctx context.Context, repoID int64, scopes, keys []string, version string) (e Entry, ok bool, err error)
	// Open streams a finalized entry's archive.
	Open(ctx context.Context, id int64) (io.ReadCloser, int64, error)
	// Evict removes what the store's policy says must go.
	Evict(ctx context.Context) (EvictStats, error)
	// Stats is the store's current size.
	Stats() StoreStats
}

// DownloadURLer is a store whose archives the runner can fetch straight
// from the storage (an S3 presigned GET): the handler then hands out that
// URL instead of its own, and the bytes never pass through runfleet.
type DownloadURLer interface {
	DownloadURL(ctx context.Context, id int64, ttl time.Duration) (string, error)
}

// EvictStats is what one eviction pass removed.
type EvictStats struct {
	Entries int
	Bytes   int64
}

// StoreStats is what a store holds now.
type StoreStats struct {
	Entries int
	Bytes   int64
}
