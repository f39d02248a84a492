package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/store"
)

// Runner credentials live in two buckets of their own, created on first
// use so that files written before they existed need no schema change:
//
//	credentials         CREDENTIALS#<name>  JSON credentialsRecord
//	credential_expiry   "<expiry ms><name>", so PurgeExpiredCredentials
//	                    reads only what is due
var (
	bucketCredentials      = []byte("credentials")
	bucketCredentialExpiry = []byte("credential_expiry")
)

var _ store.Credentials = (*Store)(nil)

// credentialsRecord is CREDENTIALS#<name>. The JIT configuration is a secret
// at rest on the controller's own disk, as the GitHub App key in its config
// directory is; the file is created 0600.
type credentialsRecord struct {
	CreateAttempt    int       `json:"create_attempt"`
	EncodedJITConfig string    `json:"encoded_jit_config"`
	ExpiresAt        time.Time `json:"expires_at"`
}

// PutRunnerCredentials implements store.Credentials.
func (s *Store) PutRunnerCredentials(ctx context.Context, c store.RunnerCredentials, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: put runner credentials: %w", err)
	}
	if err := store.CheckRunnerCredentials(c, ttl); err != nil {
		return err
	}
	now := s.now()
	return s.update(func(tx *bbolt.Tx) error {
		// Checked before the buckets are created: a refusal writes nothing.
		if old, err := readCredentials(tx.Bucket(bucketCredentials), c.Instance); err != nil {
			return err
		} else if old != nil && old.ExpiresAt.After(now) && old.CreateAttempt > c.CreateAttempt {
			return boltcommit.Unchanged(&store.StaleCredentialsError{Instance: c.Instance, Attempt: c.CreateAttempt, StoredAttempt: old.CreateAttempt})
		}
		records, index, err := credentialBuckets(tx)
		if err != nil {
			return err
		}
		old, err := readCredentials(records, c.Instance)
		if err != nil {
			return err
		}
		if old != nil {
			if err := index.Delete(expiryKey(old.ExpiresAt, c.Instance)); err != nil {
				return err
			}
		}
		rec := credentialsRecord{CreateAttempt: c.CreateAttempt, EncodedJITConfig: c.EncodedJITConfig, ExpiresAt: now.Add(ttl)}
		raw, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("bolt: encode runner credentials of %q: %w", c.Instance, err)
		}
		if err := records.Put([]byte(c.Instance), raw); err != nil {
			return err
		}
		return index.Put(expiryKey(rec.ExpiresAt, c.Instance), nil)
	})
}

// GetRunnerCredentials implements store.Credentials. Expiry is judged
// against the clock, so an expired record is absent whether or not
// PurgeExpiredCredentials has removed it yet.
func (s *Store) GetRunnerCredentials(ctx context.Context, instance string) (*store.RunnerCredentials, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: get runner credentials: %w", err)
	}
	var out *store.RunnerCredentials
	err := s.db.View(func(tx *bbolt.Tx) error {
		records := tx.Bucket(bucketCredentials)
		if records == nil {
			return nil
		}
		rec, err := readCredentials(records, instance)
		if err != nil || rec == nil || !rec.ExpiresAt.After(s.now()) {
			return err
		}
		out = &store.RunnerCredentials{
			Instance:         instance,
			CreateAttempt:    rec.CreateAttempt,
			EncodedJITConfig: rec.EncodedJITConfig,
			ExpiresAt:        rec.ExpiresAt,
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("bolt: runner credentials of %q: %w", instance, store.ErrCredentialsNotFound)
	}
	return out, nil
}

// DeleteRunnerCredentials implements store.Credentials.
func (s *Store) DeleteRunnerCredentials(ctx context.Context, instance string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: delete runner credentials: %w", err)
	}
	err := s.update(func(tx *bbolt.Tx) error {
		records := tx.Bucket(bucketCredentials)
		old, err := readCredentials(records, instance)
		if err != nil {
			return err
		}
		if old == nil {
			return boltcommit.Unchanged(errNoChange)
		}
		if index := tx.Bucket(bucketCredentialExpiry); index != nil {
			if err := index.Delete(expiryKey(old.ExpiresAt, instance)); err != nil {
				return err
			}
		}
		return records.Delete([]byte(instance))
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return err
	}
	return nil
}

// PurgeExpiredCredentials removes credentials past their expiry and returns
// how many it removed. Embedded mode's reconciler calls it beside
// PurgeExpired; it reads only the expiry index.
func (s *Store) PurgeExpiredCredentials(ctx context.Context) (int, error) {
	return s.purgeExpired(ctx, "purge expired credentials", expiringCredentials)
}

var expiringCredentials = expiring{
	records: bucketCredentials,
	index:   bucketCredentialExpiry,
	expiry:  credentialsExpiry,
}

func credentialsExpiry(records *bbolt.Bucket, instance string) (time.Time, bool, error) {
	rec, err := readCredentials(records, instance)
	if err != nil || rec == nil {
		return time.Time{}, false, err
	}
	return rec.ExpiresAt, true, nil
}

func credentialBuckets(tx *bbolt.Tx) (records, index *bbolt.Bucket, err error) {
	if records, err = tx.CreateBucketIfNotExists(bucketCredentials); err != nil {
		return nil, nil, fmt.Errorf("bolt: bucket %s: %w", bucketCredentials, err)
	}
	if index, err = tx.CreateBucketIfNotExists(bucketCredentialExpiry); err != nil {
		return nil, nil, fmt.Errorf("bolt: bucket %s: %w", bucketCredentialExpiry, err)
	}
	return records, index, nil
}

// readCredentials reads one record; a nil bucket (none stored yet) holds
// none.
func readCredentials(b *bbolt.Bucket, instance string) (*credentialsRecord, error) {
	if b == nil {
		return nil, nil
	}
	raw := b.Get([]byte(instance))
	if raw == nil {
		return nil, nil
	}
	var rec credentialsRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("bolt: decode runner credentials of %q: %w", instance, err)
	}
	return &rec, nil
}
