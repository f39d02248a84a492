package ec2

import (
	"testing"
	"time"

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

// The termination time a poll reports comes from the state transition
// reason; text without a time in EC2's form is "not known", never a guess.
func TestTransitionTimeReadsOnlyEC2sForm(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   time.Time
	}{
		{"Service initiated (2024-03-05 12:34:56 GMT)", time.Date(2024, 3, 5, 12, 34, 56, 0, time.UTC)},
		{"User initiated (2019-01-01 00:00:01 GMT)", time.Date(2019, 1, 1, 0, 0, 1, 0, time.UTC)},
		{"", time.Time{}},
		{"Server.SpotInstanceTermination: Spot instance termination", time.Time{}},
		{"Service initiated (2024-03-05T12:34:56Z)", time.Time{}},
		{"Service initiated (yesterday GMT)", time.Time{}},
	} {
		if got := transitionTime(tc.reason); !got.Equal(tc.want) {
			t.Errorf("transitionTime(%q) = %v, want %v", tc.reason, got, tc.want)
		}
	}
}
