package ec2

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/runfleet/runfleet/providers"
)

// ErrNoCapacity reports a create for which every launch choice (market,
// instance type, subnet) failed with a capacity error.
var ErrNoCapacity = errors.New("ec2: no capacity for any launch choice")

// capacityCodes are the RunInstances error codes after which another
// market, instance type or subnet may still succeed. Any other error ends
// the create: it would fail the same way for every choice.
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":         true,
	"InsufficientCapacity":                 true,
	"InsufficientHostCapacity":             true,
	"InsufficientReservedInstanceCapacity": true,
	"InsufficientFreeAddressesInSubnet":    true,
	"SpotMaxPriceTooLow":                   true,
	"MaxSpotInstanceCountExceeded":         true,
	"VcpuLimitExceeded":                    true,
	"Unsupported":                          true,
}

func isCapacityError(err error) bool {
	return capacityCodes[errorCode(err)]
}

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
