package ec2_test

import (
	"context"
	"slices"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// warmTypes are the instance types of pool's warm machines, sorted.
func (w *world) warmTypes(pool string) []string {
	var out []string
	for _, inst := range w.warm(pool) {
		out = append(out, string(inst.InstanceType))
	}
	slices.Sort(out)
	return out
}

// A pool with shapes keeps stopped machines in the shapes its jobs ask for
// (providers.WarmShaper): a 4-vCPU job's create starts one of its own
// shape instead of launching; a shape asked for no more is let go; a shape
// a stopped machine cannot serve (spot, its own image) gets none.
func TestWarmMachinesInTheShapesJobsAskFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s, policy := w.graviton()
	calls := &callCounter{}
	// warm_pool.size 1: the pool's own machine is the floor, and creates
	// look for warm machines at all only in a pool with a warm pool.
	p := w.warmProvider("shapes", s, 1, calls)
	four := *policy
	four.MinCPU = 4
	spot := four
	spot.Market = providers.MarketSpot

	got, err := p.RefillWarmShapes(ctx, "shapes", w.poolID("shapes"), []providers.WarmShape{
		{Count: 0}, {Shape: &four, Count: 2}, {Shape: &spot, Count: 3},
	})
	if err != nil || got.Launched != 3 {
		t.Fatalf("RefillWarmShapes = %+v, %v; want 3 launched (one of the pool's own, two of 4 vCPUs, no spot)", got, err)
	}
	own := s.InstanceTypes[0]
	if types, want := w.warmTypes("shapes"), sorted(own, "c7g.xlarge", "c7g.xlarge"); !slices.Equal(types, want) {
		t.Fatalf("warm machines %v, want %v", types, want)
	}
	w.powerOff(w.warm("shapes"))

	req := w.request("shapes")
	req.Shape = &four
	calls.take()
	if _, err := p.CreateInstance(ctx, req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if c := calls.take(); c["StartInstances"] != 1 || c["RunInstances"] != 0 {
		t.Fatalf("a 4-vCPU create's calls = %v, want a warm machine of its shape started", c)
	}

	// The 4-vCPU jobs stop coming: the one left is let go.
	got, err = p.RefillWarmShapes(ctx, "shapes", w.poolID("shapes"), nil)
	if err != nil || got.Launched != 0 || got.Replaced != 1 {
		t.Fatalf("RefillWarmShapes of the pool's own only = %+v, %v; want the 4-vCPU machine replaced", got, err)
	}
	var left []string
	for _, inst := range w.warm("shapes") {
		if inst.State.Name != ec2types.InstanceStateNameTerminated {
			left = append(left, string(inst.InstanceType))
		}
	}
	if !slices.Equal(left, []string{own}) {
		t.Fatalf("warm machines left %v, want one %s", left, own)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
