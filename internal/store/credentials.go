package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Credentials keeps the secret a booting runner machine fetches with its
// instance token: the encoded just-in-time runner configuration GitHub
// returned for one create attempt of one instance. It is held only for the
// bootstrap window (the pool's bootstrap timeout plus a margin) and never
// travels in a create request or user data. Every Store has it.
type Credentials interface {
	// PutRunnerCredentials stores c until ttl has passed. It replaces a
	// record of the same or an earlier create attempt (a retried create
	// registers a new runner), or an expired one, and refuses — with a
	// *StaleCredentialsError, writing nothing — a record of a later attempt:
	// a worker that lost its claim must not overwrite its successor's
	// credentials.
	PutRunnerCredentials(ctx context.Context, c RunnerCredentials, ttl time.Duration) error
	// GetRunnerCredentials returns ErrCredentialsNotFound when there is no
	// record for the instance, or only an expired one.
	GetRunnerCredentials(ctx context.Context, instance string) (*RunnerCredentials, error)
	// DeleteRunnerCredentials removes the record; an absent one is not an
	// error.
	DeleteRunnerCredentials(ctx context.Context, instance string) error
}

// RunnerCredentials is one instance's JIT runner configuration. String and
// log output never show the configuration itself.
type RunnerCredentials struct {
	Instance      string
	CreateAttempt int
	// EncodedJITConfig is GitHub's encoded_jit_config: a secret that lets
	// whoever holds it act as the runner.
	EncodedJITConfig string `json:"-"`
	// ExpiresAt is set by the store on Put (now + ttl).
	ExpiresAt time.Time
}

// String omits the secret so a credentials record can be printed safely.
func (c RunnerCredentials) String() string {
	return fmt.Sprintf("{Instance:%s CreateAttempt:%d EncodedJITConfig:[redacted] ExpiresAt:%s}",
		c.Instance, c.CreateAttempt, c.ExpiresAt.UTC().Format(time.RFC3339))
}

// LogValue logs the record without the secret.
func (c RunnerCredentials) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("instance", c.Instance),
		slog.Int("create_attempt", c.CreateAttempt),
		slog.Time("expires_at", c.ExpiresAt),
	)
}

// ErrCredentialsNotFound: no unexpired credentials for that instance.
var ErrCredentialsNotFound = errors.New("store: runner credentials not found")

// ErrStaleCredentials is matched by every *StaleCredentialsError.
var ErrStaleCredentials = errors.New("store: credentials of a later create attempt are stored")

// StaleCredentialsError reports a Put refused because the stored record
// belongs to a later create attempt.
type StaleCredentialsError struct {
	Instance      string
	Attempt       int
	StoredAttempt int
}

func (e *StaleCredentialsError) Error() string {
	return fmt.Sprintf("store: credentials of instance %q for create attempt %d refused: attempt %d's are stored",
		e.Instance, e.Attempt, e.StoredAttempt)
}

// Is makes errors.Is(err, ErrStaleCredentials) true.
func (e *StaleCredentialsError) Is(target error) bool { return target == ErrStaleCredentials }

// CheckRunnerCredentials validates a Put's arguments, the same way in every
// adapter.
func CheckRunnerCredentials(c RunnerCredentials, ttl time.Duration) error {
	switch {
	case c.Instance == "":
		return errors.New("store: runner credentials: empty instance name")
	case c.CreateAttempt < 1:
		return fmt.Errorf("store: runner credentials of %q: create attempt %d is not positive", c.Instance, c.CreateAttempt)
	case c.EncodedJITConfig == "":
		return fmt.Errorf("store: runner credentials of %q: empty JIT configuration", c.Instance)
	case ttl <= 0:
		return fmt.Errorf("store: runner credentials of %q: ttl %v is not positive", c.Instance, ttl)
	}
	return nil
}
