package ec2

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/runfleet/runfleet/providers"
)

// ErrNoCapacity reports a create for which every launch choice (market,
// instance type, subnet) failed with a capacity error. A *CapacityError
// matches it with errors.Is.
var ErrNoCapacity = errors.New("ec2: no capacity for any launch choice")

// capacityCodes are the RunInstances error codes after which another
// subnet, instance type or market may still succeed (EC2 API reference,
// "Error codes"). Any other error ends the create: it would fail the same
// way for every choice.
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":         true,
	"InsufficientCapacity":                 true,
	"InsufficientHostCapacity":             true,
	"InsufficientReservedInstanceCapacity": true,
	"InsufficientFreeAddressesInSubnet":    true,
	"UnfulfillableCapacity":                true,
	"SpotMaxPriceTooLow":                   true,
	"MaxSpotInstanceCountExceeded":         true,
	"VcpuLimitExceeded":                    true,
	"Unsupported":                          true,
}

// spotWideCodes fail every spot choice alike: the account's spot request
// limit is regional, so the rest of the spot choices are skipped and the
// create moves straight to on-demand.
var spotWideCodes = map[string]bool{
	"MaxSpotInstanceCountExceeded": true,
}

func isCapacityError(err error) bool {
	return capacityCodes[errorCode(err)]
}

// Attempt is one launch choice tried and the EC2 error code it failed with.
type Attempt struct {
	Market       string // spot or on-demand
	InstanceType string // empty: the launch template's
	Subnet       string // empty: the template's or the default VPC's
	Code         string
}

func (a Attempt) String() string {
	return choiceName(a.Market == marketSpot, a.InstanceType, a.Subnet) + ": " + a.Code
}

// CapacityError is a create that ran out of launch choices, every one
// refused for capacity, or that stopped at the attempt cap. The engine
// treats it as any failed create: the instance is retried with backoff and
// the job's demand stays open in the ledger.
type CapacityError struct {
	Attempts []Attempt
	// Capped is set when choices remained but maxLaunchAttempts was hit.
	Capped bool
	// Last is the last RunInstances error.
	Last error
}

func (e *CapacityError) Error() string {
	tried := make([]string, len(e.Attempts))
	for i, a := range e.Attempts {
		tried[i] = a.String()
	}
	what := "no EC2 capacity for any launch choice"
	if e.Capped {
		what = fmt.Sprintf("no EC2 capacity in the first %d launch choices (the cap)", len(e.Attempts))
	}
	return fmt.Sprintf("%s (%s); last: %s", what, strings.Join(tried, "; "), fault("RunInstances", e.Last))
}

// Is makes errors.Is(err, ErrNoCapacity) hold.
func (e *CapacityError) Is(target error) bool { return target == ErrNoCapacity }

func (e *CapacityError) Unwrap() error { return e.Last }

// LaunchRefusedError is a RunInstances error no other launch choice would
// avoid (authorization, a bad parameter, a quota outside capacity): the
// create stops at the first one.
type LaunchRefusedError struct {
	Attempt Attempt
	Err     error
}

func (e *LaunchRefusedError) Error() string {
	return choiceName(e.Attempt.Market == marketSpot, e.Attempt.InstanceType, e.Attempt.Subnet) + ": " + fault("RunInstances", e.Err)
}

func (e *LaunchRefusedError) Unwrap() error { return e.Err }

// errorCode is the EC2 error code of err, or "".
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// fault is the text an operator reads on the instance: the EC2 call, its
// error code and message, or the error itself when EC2 did not answer.
func fault(call string, err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("EC2 %s: %s: %s", call, apiErr.ErrorCode(), apiErr.ErrorMessage())
	}
	return fmt.Sprintf("EC2 %s: %v", call, err)
}

// callError wraps a failed EC2 call for the port.
func callError(op, instance, call string, err error) error {
	return &providers.Error{Op: op, Instance: instance, Fault: fault(call, err), Err: err}
}

func notFound(op, instance string) error {
	return &providers.Error{Op: op, Instance: instance, Fault: "no live EC2 instance of this controller has that id or name", Err: providers.ErrNotFound}
}
