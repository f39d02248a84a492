package external

import (
	"errors"
	"fmt"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/runfleet/runfleet/providers"
)

var (
	// ErrDuplicate is a provider's answer (exit 31) to a create for a
	// machine it already has.
	ErrDuplicate = errors.New("external provider: instance already exists")
	// ErrInvalidOutput reports output that breaks the protocol: malformed
	// JSON, an instance without provider_id or name, an unknown status, a
	// provider_fault that is not base64, or empty list output.
	ErrInvalidOutput = errors.New("external provider: invalid output")
)

// ExitError is a provider that exited with a non-zero status. It matches
// providers.ErrNotFound (exit 30) and ErrDuplicate (exit 31) under
// errors.Is, the protocol's two meaningful codes.
type ExitError struct {
	Code int // -1 when the process was ended by a signal
}

func (e *ExitError) Error() string {
	if e.Code < 0 {
		return "provider terminated by a signal"
	}
	return fmt.Sprintf("provider exited with status %d", e.Code)
}

// Is maps the protocol's exit codes onto runfleet's sentinel errors.
func (e *ExitError) Is(target error) bool {
	switch target {
	case providers.ErrNotFound:
		return e.Code == common.ExitCodeNotFound
	case ErrDuplicate:
		return e.Code == common.ExitCodeDuplicate
	}
	return false
}
