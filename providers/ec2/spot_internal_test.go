package ec2

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// moto cannot interrupt a spot instance: the state reasons here are EC2's
// documented ones.
func TestTakenBackIsASpotTerminationOnly(t *testing.T) {
	reason := func(code string) *ec2types.StateReason {
		return &ec2types.StateReason{Code: aws.String(code), Message: aws.String(code)}
	}
	for _, tc := range []struct {
		name string
		inst ec2types.Instance
		want bool
	}{
		{"spot interruption", ec2types.Instance{InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot, StateReason: reason("Server.SpotInstanceTermination")}, true},
		{"spot, terminated by its user", ec2types.Instance{InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot, StateReason: reason("Client.UserInitiatedShutdown")}, false},
		{"spot, running", ec2types.Instance{InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot}, false},
		{"on-demand with the code (impossible, still not spot)", ec2types.Instance{StateReason: reason("Server.SpotInstanceTermination")}, false},
		{"instance failure", ec2types.Instance{InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot, StateReason: reason("Server.InternalError")}, false},
	} {
		if got := takenBack(tc.inst); got != tc.want {
			t.Errorf("%s: takenBack = %v, want %v", tc.name, got, tc.want)
		}
	}
}
