package bolt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// poolRecord is POOL#<name>: the pool's live instance count, kept in the same
// transaction as every instance write that changes it.
type poolRecord struct {
	Live int `json:"live"`
}

// keySeparator cannot occur in a pool name (CreateInstance refuses it), so
// one pool's prefix never matches another pool's keys.
const keySeparator = 0

func liveKey(pool, name string) []byte {
	return append(livePrefix(pool), name...)
}

func livePrefix(pool string) []byte {
	return append([]byte(pool), keySeparator)
}

// expiryKey sorts by expiry so PurgeExpired can stop at the first key not yet
// due. Milliseconds, clamped at the epoch, keep the 8-byte big-endian prefix
// ordered for every time runfleet writes.
func expiryKey(at time.Time, id string) []byte {
	ms := at.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(ms))
	return append(key, id...)
}

// expiryKeyDue reports whether key's expiry is at or before now.
func expiryKeyDue(key []byte, now time.Time) bool {
	return len(key) >= 8 && int64(binary.BigEndian.Uint64(key[:8])) <= now.UnixMilli()
}

func expiryKeyID(key []byte) string { return string(key[8:]) }

func readPool(b *bbolt.Bucket, pool string) (poolRecord, error) {
	var rec poolRecord
	raw := b.Get([]byte(pool))
	if raw == nil {
		return rec, nil
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("bolt: decode pool %q: %w", pool, err)
	}
	return rec, nil
}

// addToPool changes the pool's live count by delta.
func addToPool(b *bbolt.Bucket, pool string, delta int) error {
	rec, err := readPool(b, pool)
	if err != nil {
		return err
	}
	rec.Live += delta
	if rec.Live < 0 {
		// The counter moves in the same transaction as the live index, so
		// this cannot happen short of a damaged file; a negative count would
		// let a pool exceed max_runners, so it is floored.
		rec.Live = 0
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("bolt: encode pool %q: %w", pool, err)
	}
	return b.Put([]byte(pool), raw)
}
