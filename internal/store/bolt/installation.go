package bolt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
)

var keyInstallationID = []byte("installation_id")

// InstallationID implements store.Store: 128 random bits in hex, made by
// the first caller and kept in the meta bucket, so a restarted serve reads
// the one it made before.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("bolt: installation id: %w", err)
	}
	var id string
	err := s.db.View(func(tx *bbolt.Tx) error {
		id = string(tx.Bucket(bucketMeta).Get(keyInstallationID))
		return nil
	})
	if err != nil || id != "" {
		return id, err
	}
	// Drawn before the transaction, which may run more than once; callers
	// racing to make the id all get the one that committed first.
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails: crypto/rand crashes the program instead
	candidate := hex.EncodeToString(raw[:])
	err = s.update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if existing := meta.Get(keyInstallationID); existing != nil {
			id = string(existing)
			return boltcommit.Unchanged(nil)
		}
		id = candidate
		return meta.Put(keyInstallationID, []byte(candidate))
	})
	if err != nil {
		return "", fmt.Errorf("bolt: installation id: %w", err)
	}
	return id, nil
}
