package ec2_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

func TestSpotFallsBackToOnDemandWhenSpotHasNoCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.SubnetIDs = w.subnets[:1]
	launches := &launchRecorder{fail: func(a launchAttempt) string {
		if a.Spot {
			return "InsufficientInstanceCapacity"
		}
		return ""
	}}
	p := w.provider("spot", s, launches.middleware)
	req := w.request("spot")

	inst, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	want := []launchAttempt{{Spot: true, InstanceType: "t3.large", Subnet: w.subnets[0]}, {Spot: false, InstanceType: "t3.large", Subnet: w.subnets[0]}}
	if got := launches.calls(); !slices.Equal(got, want) {
		t.Fatalf("launch attempts = %+v, want spot then on-demand: %+v", got, want)
	}
	live := w.live(req.Name)
	if len(live) != 1 || aws.ToString(live[0].InstanceId) != inst.ProviderID {
		t.Fatalf("live machines = %v, want only %s", ids(live), inst.ProviderID)
	}
	if live[0].InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		t.Error("the fallback machine is a spot instance, want on-demand")
	}
}

func TestSpotIsTriedFirstAndUsedWhenItHasCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	launches := &launchRecorder{}
	p := w.provider("spot", s, launches.middleware)
	req := w.request("spot")

	if _, err := p.CreateInstance(ctx, req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if calls := launches.calls(); len(calls) != 1 || !calls[0].Spot {
		t.Fatalf("launch attempts = %+v, want one spot launch", calls)
	}
	if live := w.live(req.Name); len(live) != 1 || live[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		t.Fatalf("want one spot machine, got %v", ids(live))
	}
}

func TestCapacityErrorsMoveThroughSubnetsThenInstanceTypesInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.InstanceTypes = []string{"c7i.large", "m7i.large", "t3.large"}
	s.SubnetIDs = w.subnets[:2]
	// c7i has no capacity anywhere; m7i is unsupported in one subnet and
	// short of capacity in the other; t3 launches.
	codes := map[string]string{"c7i.large": "InsufficientInstanceCapacity", "m7i.large": "Unsupported"}
	launches := &launchRecorder{fail: func(a launchAttempt) string { return codes[a.InstanceType] }}
	p := w.provider("fallback", s, launches.middleware)
	req := w.request("fallback")

	inst, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	calls := launches.calls()
	var types []string
	for _, c := range calls {
		types = append(types, c.InstanceType)
	}
	if want := []string{"c7i.large", "c7i.large", "m7i.large", "m7i.large", "t3.large"}; !slices.Equal(types, want) {
		t.Fatalf("instance types tried = %v, want %v", types, want)
	}
	// Each type tries both subnets, in the same name-chosen order.
	if calls[0].Subnet == calls[1].Subnet || calls[0].Subnet != calls[2].Subnet || calls[1].Subnet != calls[3].Subnet {
		t.Errorf("subnets tried = %+v, want both subnets per type in one order", calls)
	}
	if live := w.live(req.Name); len(live) != 1 || live[0].InstanceType != "t3.large" || aws.ToString(live[0].InstanceId) != inst.ProviderID {
		t.Fatalf("want one t3.large machine %s, got %v", inst.ProviderID, ids(live))
	}
}

func TestSubnetsAreSpreadByInstanceName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.SubnetIDs = w.subnets[:3]
	p := w.provider("spread", s)
	used := map[string]bool{}
	for range 12 {
		inst, err := p.CreateInstance(ctx, w.request("spread"))
		if err != nil {
			t.Fatal(err)
		}
		live := w.live(inst.Name)
		if len(live) != 1 {
			t.Fatalf("want one machine named %s, got %v", inst.Name, ids(live))
		}
		used[aws.ToString(live[0].SubnetId)] = true
	}
	// 12 random names all landing in one subnet of three: (1/3)^11.
	if len(used) < 2 {
		t.Fatalf("12 machines all used subnets %v of %v", used, s.SubnetIDs)
	}
}

func TestNonCapacityErrorEndsTheCreateWithTheEC2Fault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.InstanceTypes = []string{"t3.large", "t3.xlarge"}
	launches := &launchRecorder{fail: func(launchAttempt) string { return "UnauthorizedOperation" }}
	p := w.provider("denied", s, launches.middleware)
	req := w.request("denied")

	_, err := p.CreateInstance(ctx, req)
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("CreateInstance = %v, want a *providers.Error", err)
	}
	for _, want := range []string{"RunInstances", "UnauthorizedOperation", "injected by the test"} {
		if !strings.Contains(pe.Fault, want) {
			t.Errorf("fault %q lacks %q", pe.Fault, want)
		}
	}
	if errors.Is(err, ec2.ErrNoCapacity) {
		t.Error("an authorization error reported as no capacity")
	}
	if n := len(launches.calls()); n != 1 {
		t.Errorf("RunInstances called %d times, want 1: a non-capacity error fails every choice alike", n)
	}
	if live := w.live(req.Name); len(live) != 0 {
		t.Errorf("machines launched: %v", ids(live))
	}
}

func TestNoCapacityAnywhereFailsWithEveryChoiceInTheFault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.InstanceTypes = []string{"t3.large", "t3.xlarge"}
	s.SubnetIDs = w.subnets[:1]
	launches := &launchRecorder{fail: func(a launchAttempt) string {
		if a.Spot {
			return "SpotMaxPriceTooLow"
		}
		return "InsufficientInstanceCapacity"
	}}
	p := w.provider("full", s, launches.middleware)

	_, err := p.CreateInstance(ctx, w.request("full"))
	if !errors.Is(err, ec2.ErrNoCapacity) {
		t.Fatalf("CreateInstance = %v, want ErrNoCapacity", err)
	}
	fault := providers.Fault(err)
	for _, want := range []string{
		"spot t3.large in " + w.subnets[0] + ": SpotMaxPriceTooLow",
		"spot t3.xlarge",
		"on-demand t3.large",
		"on-demand t3.xlarge in " + w.subnets[0] + ": InsufficientInstanceCapacity",
	} {
		if !strings.Contains(fault, want) {
			t.Errorf("fault %q lacks %q", fault, want)
		}
	}
	if n := len(launches.calls()); n != 4 {
		t.Errorf("RunInstances called %d times, want 4 (2 markets × 2 types × 1 subnet)", n)
	}
}
