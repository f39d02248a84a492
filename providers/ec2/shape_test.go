package ec2_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// typeLookups is SDK middleware counting DescribeInstanceTypes calls.
type typeLookups struct{ n atomic.Int64 }

func (c *typeLookups) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("runfleetTestTypeLookups",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if _, ok := in.Parameters.(*awsec2.DescribeInstanceTypesInput); ok {
				c.n.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// armImage is an arm64 AMI moto has from the start.
func (w *world) armImage() string {
	w.t.Helper()
	out, err := w.ec2.DescribeImages(context.Background(), &awsec2.DescribeImagesInput{
		Owners:  []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"arm64"}}},
	})
	if err != nil {
		w.t.Fatalf("DescribeImages: %v", err)
	}
	for _, img := range out.Images {
		if aws.ToString(img.RootDeviceName) != "" {
			return aws.ToString(img.ImageId)
		}
	}
	w.t.Fatal("moto has no arm64 image with a root device")
	return ""
}

// graviton is a pool's settings with an arm64 image, whose shaped jobs may
// use c7g and m7g (cheapest first) up to 16 vCPUs and 64 GiB.
func (w *world) graviton() (ec2.Settings, *providers.Shape) {
	s := w.settings()
	s.ImageID = w.armImage()
	s.SubnetIDs = w.subnets[:1]
	return s, &providers.Shape{Families: []string{"c7g", "m7g"}, MaxCPU: 16, MaxMemoryGiB: 64}
}

// The acceptance case: a job asking for 4 vCPUs gets the cheapest allowed
// type with at least 4 — c7g.xlarge (4 vCPUs, 8 GiB in moto's copy of
// EC2's facts), ahead of m7g.xlarge (4, 16) and anything with 8 vCPUs;
// the next choices are what capacity failover moves on to.
func TestFourVCPUsGetTheCheapestAllowedTypeWithAtLeastFour(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s, shape := w.graviton()
	launches := &launchRecorder{fail: func(a launchAttempt) string {
		if a.InstanceType == "c7g.xlarge" {
			return "InsufficientInstanceCapacity"
		}
		return ""
	}}
	p := w.provider("shaped", s, launches.middleware)
	req := w.request("shaped")
	shape.MinCPU = 4
	req.Shape = shape

	if _, err := p.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	got := launches.calls()
	want := []launchAttempt{{InstanceType: "c7g.xlarge", Subnet: w.subnets[0]}, {InstanceType: "m7g.xlarge", Subnet: w.subnets[0]}}
	if !slices.Equal(got, want) {
		t.Fatalf("launch attempts %+v, want c7g.xlarge first, then the next cheapest, m7g.xlarge: %+v", got, want)
	}
	live := w.live(req.Name)
	if len(live) != 1 || live[0].InstanceType != "m7g.xlarge" || aws.ToString(live[0].ImageId) != s.ImageID {
		t.Fatalf("machines %+v, want one m7g.xlarge of the pool's image", live)
	}
}

func TestShapeSelectionRule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s, base := w.graviton()
	cases := []struct {
		name   string
		adjust func(*providers.Shape)
		want   string
	}{
		{"memory decides within a vCPU count", func(sh *providers.Shape) { sh.MinCPU, sh.MinMemoryGiB = 4, 16 }, "m7g.xlarge"},
		{"fewest vCPUs that give the memory", func(sh *providers.Shape) { sh.MinMemoryGiB = 16 }, "m7g.xlarge"},
		{"nothing asked: the smallest", func(sh *providers.Shape) { sh.MinMemoryGiB = 1 }, "c7g.medium"},
		{"the job's family only", func(sh *providers.Shape) { sh.MinCPU, sh.Families = 4, []string{"m7g"} }, "m7g.xlarge"},
		{"size before family order", func(sh *providers.Shape) {
			sh.MinCPU, sh.MinMemoryGiB, sh.Families = 8, 16, []string{"m7g", "c7g"}
		}, "c7g.2xlarge"},
		// m6g.xlarge and m7g.xlarge are both 4 vCPUs, 16 GiB.
		{"family order settles equal sizes", func(sh *providers.Shape) { sh.MinCPU, sh.Families = 4, []string{"m7g", "m6g"} }, "m7g.xlarge"},
		{"family order settles equal sizes, reversed", func(sh *providers.Shape) { sh.MinCPU, sh.Families = 4, []string{"m6g", "m7g"} }, "m6g.xlarge"},
	}
	for _, c := range cases {
		launches := &launchRecorder{}
		p := w.provider("rule", s, launches.middleware)
		shape := *base
		shape.Families = slices.Clone(base.Families)
		c.adjust(&shape)
		req := w.request("rule")
		req.Shape = &shape
		if _, err := p.CreateInstance(context.Background(), req); err != nil {
			t.Fatalf("%s: CreateInstance: %v", c.name, err)
		}
		if calls := launches.calls(); len(calls) != 1 || calls[0].InstanceType != c.want {
			t.Errorf("%s: launched %+v, want %s", c.name, calls, c.want)
		}
	}
}

// The pool's limits cap the machine, not only the request: asking for
// 32 GiB with at most 8 vCPUs rules out c7g.4xlarge (16, 32) and picks
// m7g.2xlarge (8, 32). Nothing within the limits: no launch at all.
func TestPoolLimitsCapTheMachine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s, shape := w.graviton()
	launches := &launchRecorder{}
	p := w.provider("capped", s, launches.middleware)

	shape.MinMemoryGiB, shape.MaxCPU = 32, 8
	shape.Families = []string{"c7g", "m7g"}
	req := w.request("capped")
	req.Shape = shape
	if _, err := p.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if calls := launches.calls(); len(calls) != 1 || calls[0].InstanceType != "m7g.2xlarge" {
		t.Fatalf("launched %+v, want m7g.2xlarge", calls)
	}

	tooBig := *shape
	tooBig.MinMemoryGiB, tooBig.MaxMemoryGiB = 64, 48
	req = w.request("capped")
	req.Shape = &tooBig
	_, err := p.CreateInstance(context.Background(), req)
	if !errors.Is(err, ec2.ErrNoShapeMatch) {
		t.Fatalf("CreateInstance = %v, want ErrNoShapeMatch", err)
	}
	if calls := launches.calls(); len(calls) != 1 {
		t.Fatalf("RunInstances called for a shape nothing satisfies: %+v", calls)
	}
	if live := w.live(req.Name); len(live) != 0 {
		t.Fatalf("machines for an unsatisfiable shape: %v", ids(live))
	}
}

// One image boots on one architecture: an x86_64 image never gets a
// Graviton type, however cheap.
func TestShapeFollowsTheImagesArchitecture(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings() // x86_64 image
	s.SubnetIDs = w.subnets[:1]
	launches := &launchRecorder{}
	p := w.provider("x86", s, launches.middleware)
	req := w.request("x86")
	req.Shape = &providers.Shape{MinCPU: 4, Families: []string{"c7g", "m7i"}, MaxCPU: 16, MaxMemoryGiB: 64}
	if _, err := p.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if calls := launches.calls(); len(calls) != 1 || calls[0].InstanceType != "m7i.xlarge" {
		t.Fatalf("launched %+v, want m7i.xlarge (the x86_64 image rules out c7g)", calls)
	}
	req = w.request("x86")
	req.Shape = &providers.Shape{MinCPU: 4, Families: []string{"c7g"}, MaxCPU: 16, MaxMemoryGiB: 64}
	if _, err := p.CreateInstance(context.Background(), req); !errors.Is(err, ec2.ErrNoShapeMatch) {
		t.Fatalf("an arm64-only shape on an x86_64 image: %v, want ErrNoShapeMatch", err)
	}
}

// A shape's image, disk and market replace the pool's: spot=false runs
// on-demand in a spot pool, the alias's AMI boots, the root volume has the
// asked size.
func TestShapeImageDiskAndMarket(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	s.SubnetIDs = w.subnets[:1]
	arm := w.armImage()
	launches := &launchRecorder{}
	p := w.provider("custom", s, launches.middleware)
	req := w.request("custom")
	req.Shape = &providers.Shape{MinCPU: 2, Families: []string{"m7g"}, MaxCPU: 8, MaxMemoryGiB: 32, DiskGiB: 120, Market: providers.MarketOnDemand, Image: arm}
	inst, err := p.CreateInstance(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if calls := launches.calls(); len(calls) != 1 || calls[0].Spot || calls[0].InstanceType != "m7g.large" {
		t.Fatalf("launched %+v, want one on-demand m7g.large", calls)
	}
	live := w.live(req.Name)
	if len(live) != 1 || aws.ToString(live[0].ImageId) != arm {
		t.Fatalf("machines %+v, want one of image %s", live, arm)
	}
	vols, err := w.ec2.DescribeVolumes(context.Background(), &awsec2.DescribeVolumesInput{
		Filters: []ec2types.Filter{{Name: aws.String("attachment.instance-id"), Values: []string{inst.ProviderID}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vols.Volumes) != 1 || aws.ToInt32(vols.Volumes[0].Size) != 120 {
		t.Fatalf("volumes %+v, want one root volume of 120 GiB", vols.Volumes)
	}
}

// Instance type facts are asked of EC2 once per family per TTL, however
// many creates need them at once, and again once the TTL is over.
func TestInstanceTypeFactsAreCached(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s, shape := w.graviton()
	lookups := &typeLookups{}
	p := w.provider("cached", s, lookups.middleware)
	var clock testclock.Clock
	ec2.SetTypeFactsClock(p, clock.Now)
	shape.MinCPU = 2

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			req := w.request("cached")
			req.Shape = shape
			_, err := p.CreateInstance(context.Background(), req)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("CreateInstance: %v", err)
		}
	}
	if n := lookups.n.Load(); n != 1 {
		t.Fatalf("DescribeInstanceTypes called %d times for 4 creates, want 1", n)
	}
	clock.Advance(ec2.TypeFactsTTL + time.Minute)
	req := w.request("cached")
	req.Shape = shape
	if _, err := p.CreateInstance(context.Background(), req); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if n := lookups.n.Load(); n != 2 {
		t.Fatalf("DescribeInstanceTypes called %d times after the TTL, want 2", n)
	}
}

// Without a shape nothing changes: the pool's types, no type lookup.
func TestUnshapedCreateLooksUpNoTypes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lookups := &typeLookups{}
	launches := &launchRecorder{}
	p := w.provider("plain", w.settings(), lookups.middleware, launches.middleware)
	if _, err := p.CreateInstance(context.Background(), w.request("plain")); err != nil {
		t.Fatal(err)
	}
	if n := lookups.n.Load(); n != 0 {
		t.Errorf("DescribeInstanceTypes called %d times for an unshaped create", n)
	}
	if calls := launches.calls(); len(calls) != 1 || calls[0].InstanceType != "t3.large" {
		t.Errorf("launched %+v, want the pool's t3.large", calls)
	}
}
