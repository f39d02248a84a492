package scaleset

import (
	"errors"
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/github"
)

// Error kinds. Every error this client returns for an answer it did not
// expect is an *Error whose kind is one of these: match them with
// errors.Is. The package doc says what a listener does with each.
var (
	// ErrSessionConflict: the scale set already has a message session
	// (409, RunnerScaleSetSessionConflictException).
	ErrSessionConflict = errors.New("scaleset: the scale set already has an active message session")
	// ErrQueueTokenExpired: the message queue refused the session's queue
	// token (401), and a refresh did not cure it.
	ErrQueueTokenExpired = errors.New("scaleset: message queue token expired or invalid")
	// ErrSessionNotFound: GitHub no longer knows the session (404 on
	// refresh or delete; RunnerAdminException).
	ErrSessionNotFound = errors.New("scaleset: message session not found")
	// ErrSessionExpired: the session expired before it was deleted
	// (RunnerScaleSetSessionExpiredException).
	ErrSessionExpired = errors.New("scaleset: message session expired")
	// ErrScaleSetNotFound: the scale set does not exist (404,
	// RunnerScaleSetNotFoundException), e.g. deleted by GitHub.
	ErrScaleSetNotFound = errors.New("scaleset: runner scale set not found")
	// ErrRunnerGroupNotFound: no runner group has the name. Retrying
	// cannot fix it; it also matches github.ErrMisconfigured.
	ErrRunnerGroupNotFound = fmt.Errorf("scaleset: runner group not found: %w", github.ErrMisconfigured)
	// ErrRunnerBusy: GitHub refused to remove a runner that is running a
	// job (JobStillRunningException). It also matches
	// github.ErrRunnerBusy, the busy guard the engine already keeps.
	ErrRunnerBusy = fmt.Errorf("scaleset: %w", github.ErrRunnerBusy)
	// ErrRunnerNotFound: GitHub does not know the runner
	// (AgentNotFoundException or 404). For a removal it means done.
	ErrRunnerNotFound = errors.New("scaleset: runner not found")
	// ErrRunnerExists: a runner with the JIT config's name is registered
	// already (AgentExistsException).
	ErrRunnerExists = errors.New("scaleset: a runner with this name exists")
	// ErrUnauthorized: the admin token or registration was refused (401
	// or 403 that is not a rate limit) even after re-registering.
	ErrUnauthorized = errors.New("scaleset: unauthorized")
	// ErrRateLimited: GitHub refused the call for a rate limit. The
	// *Error also unwraps to a *github.RateLimitError with RetryAt.
	ErrRateLimited = errors.New("scaleset: rate limited")
	// ErrServer: GitHub failed (5xx). Retry with backoff.
	ErrServer = errors.New("scaleset: server error")
	// ErrTransport: the call never got an answer (connection, timeout).
	// Retry with backoff.
	ErrTransport = errors.New("scaleset: no answer")
	// ErrBadResponse: the answer could not be used: undecodable, over
	// the size limit, or missing a field the protocol requires.
	ErrBadResponse = errors.New("scaleset: unusable answer")
	// ErrUnexpected: any other status GitHub answered.
	ErrUnexpected = errors.New("scaleset: unexpected answer")
)

// Error is one failed call: what was asked, what GitHub answered, and the
// kind (errors.Is) the caller acts on.
type Error struct {
	Op         string // the operation, e.g. "create message session"
	Kind       error  // one of the Err* kinds above
	StatusCode int    // 0 when no answer came
	// TypeName and Message are the Actions service's exception body
	// ({"typeName", "message"}), when it sent one.
	TypeName string
	Message  string
	// ActivityID and RequestID identify the call for GitHub support.
	ActivityID string
	RequestID  string
	// RateLimit is set when Kind is ErrRateLimited.
	RateLimit *github.RateLimitError
	// Err is the underlying cause (a transport or decoding error).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Kind, e.Op)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.StatusCode)
		if e.ActivityID != "" {
			fmt.Fprintf(&b, ", activity %s", e.ActivityID)
		}
		if e.RequestID != "" {
			fmt.Fprintf(&b, ", request %s", e.RequestID)
		}
		b.WriteString(")")
	}
	if e.TypeName != "" {
		fmt.Fprintf(&b, ": %s", e.TypeName)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap exposes the kind, the rate limit and the cause to errors.Is and
// errors.As.
func (e *Error) Unwrap() []error {
	out := []error{e.Kind}
	if e.RateLimit != nil {
		out = append(out, e.RateLimit)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Retryable says whether the same call may succeed later without the
// caller changing anything: a 5xx, no answer, an unusable answer, or a
// rate limit (after RetryAt).
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrServer, ErrTransport, ErrBadResponse, ErrRateLimited:
		return true
	}
	return false
}

// IsRetryable reports whether err is an *Error that is Retryable.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable()
}
