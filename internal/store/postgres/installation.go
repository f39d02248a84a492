package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

const keyInstallationID = "installation_id"

// InstallationID implements store.Store: 128 random bits in hex, made by
// the first caller and kept in runfleet_meta, so every replica reads the
// same one. Callers racing to make it all get the one that committed
// first.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	id, err := s.readMeta(ctx, keyInstallationID)
	if err != nil || id != "" {
		return id, err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails: crypto/rand crashes the program instead
	if _, err := s.pool.Exec(ctx, "INSERT INTO runfleet_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
		keyInstallationID, hex.EncodeToString(raw[:])); err != nil {
		return "", fmt.Errorf("postgres: installation id: %w", err)
	}
	// A statement of its own, so it sees whichever insert won.
	return s.readMeta(ctx, keyInstallationID)
}

func (s *Store) readMeta(ctx context.Context, key string) (string, error) {
	var value string
	err := s.pool.QueryRow(ctx, "SELECT value FROM runfleet_meta WHERE key = $1", key).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres: read %s: %w", key, err)
	}
	return value, nil
}
