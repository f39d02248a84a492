package ec2_test

import (
	"context"
	"testing"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// With the pool's spot breaker open the engine asks for on-demand only: a
// spot pool launches on-demand at once, without trying spot first.
func TestOnDemandOnlySkipsSpot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	launches := &launchRecorder{}
	p := w.provider("spot", s, launches.middleware)
	req := w.request("spot")
	req.OnDemandOnly = true

	if _, err := p.CreateInstance(ctx, req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if calls := launches.calls(); len(calls) != 1 || calls[0].Spot {
		t.Fatalf("launch attempts = %+v, want one on-demand launch", calls)
	}
	if live := w.live(req.Name); len(live) != 1 || live[0].InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		t.Fatalf("want one on-demand machine, got %v", ids(live))
	}
}

// ListInterrupted reports only spot machines EC2 terminated for a spot
// interruption. moto cannot interrupt a spot instance, so this checks the
// other side: a running spot machine and one a user terminated are not
// reported, and the call is accepted by EC2's API as sent.
func TestListInterruptedIgnoresMachinesNotTakenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	p := w.provider("spot", s)
	running := w.request("spot")
	if _, err := p.CreateInstance(ctx, running); err != nil {
		t.Fatal(err)
	}
	stopped := w.request("spot")
	stopped.Name += "-2"
	m, err := p.CreateInstance(ctx, stopped)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ec2.TerminateInstances(ctx, &awsec2.TerminateInstancesInput{InstanceIds: []string{m.ProviderID}}); err != nil {
		t.Fatal(err)
	}
	got, err := p.ListInterrupted(ctx, w.poolID("spot"))
	if err != nil {
		t.Fatalf("ListInterrupted: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("ListInterrupted = %+v, want none (nothing was taken back)", got)
	}
	if _, err := p.ListInterrupted(ctx, w.poolID("other")); err == nil {
		t.Error("ListInterrupted of another pool's id was answered")
	}
}
