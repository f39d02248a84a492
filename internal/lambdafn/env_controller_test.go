package lambdafn

import (
	"errors"
	"testing"
)

// A config whose controller_id is not the stack's ControllerId would leave
// every alarm reading nothing: the function refuses to start instead.
func TestControllerIDMustMatchTheStacksParameter(t *testing.T) {
	if err := checkControllerID(Env{}, "acme-ci"); err != nil {
		t.Fatalf("unset parameter: %v, want nothing compared", err)
	}
	if err := checkControllerID(Env{ControllerID: "acme-ci"}, "acme-ci"); err != nil {
		t.Fatalf("same id: %v", err)
	}
	err := checkControllerID(Env{ControllerID: "runfleet-smoke"}, "acme-ci")
	var mismatch *ControllerIDMismatchError
	if !errors.As(err, &mismatch) || mismatch.Config != "acme-ci" || mismatch.Stack != "runfleet-smoke" {
		t.Fatalf("different ids: %v, want a ControllerIDMismatchError naming both", err)
	}
}
