package lambdafn

import (
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/runfleet/runfleet/internal/telemetry"
)

// Lazy holds what a function builds once per execution environment: it is
// built on the first invocation and reused while the environment stays
// warm. A failed build is never kept: the invocation reports it and the
// next one tries again, so a throttled SSM call or a config fixed in SSM
// recovers without a redeploy (a bad config costs one SSM read per
// invocation until it is fixed, and fails loudly each time).
type Lazy[T any] struct {
	build func(context.Context) (T, error)
	// log reports failed builds, which happen before the app's logger exists.
	log  *slog.Logger
	role Role

	mu    sync.Mutex
	built bool
	value T
}

// NewLazy returns a Lazy for role's function that builds with build and
// logs failed builds to log (nil: JSON lines on stdout).
func NewLazy[T any](role Role, build func(context.Context) (T, error), log *slog.Logger) *Lazy[T] {
	if log == nil {
		log = telemetry.NewLogger(os.Stdout, slog.LevelInfo)
	}
	return &Lazy[T]{build: build, log: log.With("function", string(role)), role: role}
}

// Get returns the built value, building it first if need be. A failed
// build is returned as a *StartError.
func (l *Lazy[T]) Get(ctx context.Context) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return l.value, nil
	}
	value, err := l.build(ctx)
	if err != nil {
		l.Logger(ctx).ErrorContext(ctx, "function could not start; the next invocation tries again", "error", err)
		var zero T
		return zero, &StartError{Role: l.role, Err: err}
	}
	l.value, l.built = value, true
	return value, nil
}

// Logger is the logger failed builds are reported to, with ctx's request
// id: for what a handler logs about an invocation it could not serve.
func (l *Lazy[T]) Logger(ctx context.Context) *slog.Logger {
	return WithRequestID(ctx, l.log)
}
