package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/store"
)

// putCredentialsSQL stores a create attempt's credentials over those of
// the same or an earlier attempt, or over expired ones, and leaves a later
// attempt's alone (zero rows: the caller reports it stale).
const putCredentialsSQL = `
INSERT INTO runfleet_credentials AS c (instance, create_attempt, encoded_jit_config, expires_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (instance) DO UPDATE
	SET create_attempt = excluded.create_attempt, encoded_jit_config = excluded.encoded_jit_config,
		expires_at = excluded.expires_at
	WHERE c.create_attempt <= excluded.create_attempt OR c.expires_at <= $5`

// PutRunnerCredentials implements store.Credentials. The JIT
// configuration is a secret at rest in the database, as it is in bolt's
// file: whoever can read the database can act as a booting runner until
// the record expires.
func (s *Store) PutRunnerCredentials(ctx context.Context, c store.RunnerCredentials, ttl time.Duration) error {
	if err := store.CheckRunnerCredentials(c, ttl); err != nil {
		return err
	}
	now := s.now()
	tag, err := s.pool.Exec(ctx, putCredentialsSQL, c.Instance, c.CreateAttempt, c.EncodedJITConfig, ceilMicro(now.Add(ttl)), now)
	if err != nil {
		return fmt.Errorf("postgres: put runner credentials of %q: %w", c.Instance, err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var stored int
	if err := s.pool.QueryRow(ctx, "SELECT create_attempt FROM runfleet_credentials WHERE instance = $1", c.Instance).Scan(&stored); err != nil {
		return fmt.Errorf("postgres: put runner credentials of %q: read the stored attempt: %w", c.Instance, err)
	}
	return &store.StaleCredentialsError{Instance: c.Instance, Attempt: c.CreateAttempt, StoredAttempt: stored}
}

// GetRunnerCredentials implements store.Credentials; an expired record is
// absent whether or not it has been purged yet.
func (s *Store) GetRunnerCredentials(ctx context.Context, instance string) (*store.RunnerCredentials, error) {
	c := store.RunnerCredentials{Instance: instance}
	err := s.pool.QueryRow(ctx, `SELECT create_attempt, encoded_jit_config, expires_at FROM runfleet_credentials
		WHERE instance = $1 AND expires_at > $2`, instance, s.now()).Scan(&c.CreateAttempt, &c.EncodedJITConfig, &c.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: runner credentials of %q: %w", instance, store.ErrCredentialsNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get runner credentials of %q: %w", instance, err)
	}
	return &c, nil
}

// DeleteRunnerCredentials implements store.Credentials.
func (s *Store) DeleteRunnerCredentials(ctx context.Context, instance string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM runfleet_credentials WHERE instance = $1", instance); err != nil {
		return fmt.Errorf("postgres: delete runner credentials of %q: %w", instance, err)
	}
	return nil
}
