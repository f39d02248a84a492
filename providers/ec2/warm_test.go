package ec2_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// callCounter is SDK middleware counting the provider's EC2 calls by
// operation: how a warm start and a cold launch compare in API calls.
type callCounter struct {
	mu    sync.Mutex
	count map[string]int
}

func (c *callCounter) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("runfleetTestCallCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.count == nil {
				c.count = map[string]int{}
			}
			c.count[middleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// take returns the counts so far and starts again from zero.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.count
	c.count = nil
	return out
}

// warmProvider is pool's provider with a warm pool of size, on moto,
// claiming without a settle pause (moto reads its writes at once).
func (w *world) warmProvider(pool string, s ec2.Settings, size int, calls *callCounter) *ec2.Provider {
	w.t.Helper()
	s.WarmPool.Size = size
	cfg := testenv.AWSConfig(w.t)
	cfg.APIOptions = append(cfg.APIOptions, calls.middleware)
	p, err := ec2.NewWithConfig(cfg, w.ownership(pool), s, ec2.WithWarmClaimSettle(0))
	if err != nil {
		w.t.Fatalf("NewWithConfig: %v", err)
	}
	return p
}

// warm returns the pool's live warm machines (tagged runfleet:warm).
func (w *world) warm(pool string) []ec2types.Instance {
	w.t.Helper()
	out, err := w.ec2.DescribeInstances(context.Background(), &awsec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"runfleet:warm"}},
		{Name: aws.String("tag:runfleet:pool-id"), Values: []string{w.poolID(pool)}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	if err != nil {
		w.t.Fatalf("DescribeInstances: %v", err)
	}
	var all []ec2types.Instance
	for _, r := range out.Reservations {
		all = append(all, r.Instances...)
	}
	return all
}

// powerOff plays the warm machines' own preparation ending: their user
// data powers them off, which moto cannot run.
func (w *world) powerOff(instances []ec2types.Instance) {
	w.t.Helper()
	if _, err := w.ec2.StopInstances(context.Background(), &awsec2.StopInstancesInput{InstanceIds: idsOnly(instances)}); err != nil {
		w.t.Fatalf("StopInstances: %v", err)
	}
}

func (w *world) instance(id string) ec2types.Instance {
	w.t.Helper()
	out, err := w.ec2.DescribeInstances(context.Background(), &awsec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		w.t.Fatalf("DescribeInstances %s: %v", id, err)
	}
	return out.Reservations[0].Instances[0]
}

func (w *world) shutdownBehavior(id string) string {
	w.t.Helper()
	out, err := w.ec2.DescribeInstanceAttribute(context.Background(), &awsec2.DescribeInstanceAttributeInput{
		InstanceId: aws.String(id), Attribute: ec2types.InstanceAttributeNameInstanceInitiatedShutdownBehavior,
	})
	if err != nil {
		w.t.Fatalf("DescribeInstanceAttribute: %v", err)
	}
	return aws.ToString(out.InstanceInitiatedShutdownBehavior.Value)
}

func tag(inst ec2types.Instance, key string) (string, bool) {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value), true
		}
	}
	return "", false
}

func TestStoppedWarmPoolServesAJobWithStartInstancesAndRefills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	p := w.warmProvider("warm", w.settings(), 2, calls)

	got, err := p.RefillWarm(ctx, "warm", w.poolID("warm"))
	if err != nil || got.Launched != 2 {
		t.Fatalf("RefillWarm = %+v, %v; want 2 launched", got, err)
	}
	warm := w.warm("warm")
	if len(warm) != 2 {
		t.Fatalf("warm machines = %v, want 2", ids(warm))
	}
	for _, inst := range warm {
		if b := w.shutdownBehavior(aws.ToString(inst.InstanceId)); b != "stop" {
			t.Errorf("warm machine shuts down with %q, want stop", b)
		}
		if ud := w.userData(aws.ToString(inst.InstanceId)); !strings.Contains(ud, "# runfleet: warm pool machine") || !strings.Contains(ud, "systemctl poweroff") {
			t.Errorf("warm user data does not prepare and power off:\n%s", ud)
		}
		if _, ok := tag(inst, "runfleet:instance"); ok {
			t.Error("a warm machine carries a runner name")
		}
	}
	// Warm machines are nobody's runner: not listed, so never orphans.
	if listed, err := p.ListInstances(ctx, w.poolID("warm")); err != nil || len(listed) != 0 {
		t.Fatalf("ListInstances = %v, %v; want no machines (warm ones are not runners)", listed, err)
	}
	// Refilling a full pool launches nothing.
	if got, err := p.RefillWarm(ctx, "warm", w.poolID("warm")); err != nil || got.Launched != 0 || got.Replaced != 0 {
		t.Fatalf("second RefillWarm = %+v, %v; want nothing to do", got, err)
	}
	w.powerOff(warm)
	calls.take()

	req := w.request("warm")
	inst, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	warmStart := calls.take()
	if !slices.Contains(idsOnly(warm), inst.ProviderID) {
		t.Fatalf("the job got %s, want one of the warm machines %v", inst.ProviderID, ids(warm))
	}
	if warmStart["StartInstances"] != 1 || warmStart["RunInstances"] != 0 {
		t.Fatalf("calls = %v, want one StartInstances and no RunInstances", warmStart)
	}
	started := w.instance(inst.ProviderID)
	if s := started.State.Name; s != ec2types.InstanceStateNameRunning && s != ec2types.InstanceStateNamePending {
		t.Fatalf("the claimed machine is %s, want started", s)
	}
	if name, _ := tag(started, "runfleet:instance"); name != req.Name {
		t.Errorf("claimed machine's runfleet:instance = %q, want %q", name, req.Name)
	}
	if _, ok := tag(started, "runfleet:warm"); ok {
		t.Error("the claimed machine is still tagged warm")
	}
	if ud := w.userData(inst.ProviderID); !strings.Contains(ud, req.InstanceToken) || strings.Contains(ud, "warm pool machine") {
		t.Errorf("claimed machine's user data is not this runner's bootstrap:\n%s", ud)
	}
	if b := w.shutdownBehavior(inst.ProviderID); b != "terminate" {
		t.Errorf("the claimed machine shuts down with %q, want terminate", b)
	}
	// Now a runner: listed, found by name.
	listed, err := p.ListInstances(ctx, w.poolID("warm"))
	if err != nil || len(listed) != 1 || listed[0].Name != req.Name {
		t.Fatalf("ListInstances = %+v, %v; want the claimed machine only", listed, err)
	}
	if got, err := p.GetInstance(ctx, req.Name); err != nil || got.ProviderID != inst.ProviderID {
		t.Fatalf("GetInstance(%s) = %+v, %v", req.Name, got, err)
	}
	// A retry of the same create gets the same machine.
	again, err := p.CreateInstance(ctx, req)
	if err != nil || again.ProviderID != inst.ProviderID {
		t.Fatalf("retried CreateInstance = %+v, %v; want %s again", again, err, inst.ProviderID)
	}

	// The refill replaces what the job took.
	got, err = p.RefillWarm(ctx, "warm", w.poolID("warm"))
	if err != nil || got.Launched != 1 || got.Replaced != 0 {
		t.Fatalf("RefillWarm after the start = %+v, %v; want 1 launched", got, err)
	}
	if n := len(w.warm("warm")); n != 2 {
		t.Fatalf("%d warm machines after the refill, want 2", n)
	}

	// The same create with no warm machine ready: a cold launch, for the
	// API-call comparison in docs/providers-ec2.md.
	cold := w.warmProvider("cold", w.settings(), 0, calls)
	calls.take()
	if _, err := cold.CreateInstance(ctx, w.request("cold")); err != nil {
		t.Fatalf("cold CreateInstance: %v", err)
	}
	coldLaunch := calls.take()
	if want := map[string]int{"DescribeInstances": 1, "RunInstances": 1}; !maps.Equal(coldLaunch, want) {
		t.Errorf("cold launch calls = %v, want %v", coldLaunch, want)
	}
	want := map[string]int{"DescribeInstances": 3, "CreateTags": 2, "DeleteTags": 1, "ModifyInstanceAttribute": 2, "StartInstances": 1}
	if !maps.Equal(warmStart, want) {
		t.Errorf("warm start calls = %v, want %v", warmStart, want)
	}
}

func TestWarmMachinesOfAnOlderImageAreReplacedNotStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	old := w.warmProvider("stale", w.settings(), 1, calls)
	if got, err := old.RefillWarm(ctx, "stale", w.poolID("stale")); err != nil || got.Launched != 1 {
		t.Fatalf("RefillWarm = %+v, %v", got, err)
	}
	stale := w.warm("stale")
	w.powerOff(stale)

	// The pool moves to a new image.
	s := w.settings()
	s.ImageID = otherImage(t, w)
	p := w.warmProvider("stale", s, 1, calls)
	calls.take()
	req := w.request("stale")
	inst, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if inst.ProviderID == aws.ToString(stale[0].InstanceId) {
		t.Fatal("a warm machine of the old image was started")
	}
	if c := calls.take(); c["RunInstances"] != 1 || c["StartInstances"] != 0 {
		t.Fatalf("calls = %v, want a launch", c)
	}

	got, err := p.RefillWarm(ctx, "stale", w.poolID("stale"))
	if err != nil || got.Replaced != 1 || got.Launched != 1 {
		t.Fatalf("RefillWarm = %+v, %v; want the stale machine replaced", got, err)
	}
	if st := w.instance(aws.ToString(stale[0].InstanceId)).State.Name; st != ec2types.InstanceStateNameShuttingDown && st != ec2types.InstanceStateNameTerminated {
		t.Errorf("stale warm machine is %s, want terminated", st)
	}
	fresh := w.warm("stale")
	if len(fresh) != 1 || aws.ToString(fresh[0].ImageId) != s.ImageID {
		t.Fatalf("warm machines after the refill = %v, want one of %s", ids(fresh), s.ImageID)
	}
}

func TestConcurrentCreatesNeverStartTheSameWarmMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	p := w.warmProvider("race", w.settings(), 1, calls)
	if _, err := p.RefillWarm(ctx, "race", w.poolID("race")); err != nil {
		t.Fatal(err)
	}
	warm := w.warm("race")
	w.powerOff(warm)

	const creates = 4
	got := make([]providers.Instance, creates)
	errs := make([]error, creates)
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() { got[i], errs[i] = p.CreateInstance(ctx, w.request("race")) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range creates {
		if errs[i] != nil {
			t.Fatalf("CreateInstance: %v", errs[i])
		}
		if seen[got[i].ProviderID] {
			t.Fatalf("two creates got machine %s", got[i].ProviderID)
		}
		seen[got[i].ProviderID] = true
	}
	if n := calls.take()["StartInstances"]; n > 1 {
		t.Errorf("StartInstances called %d times for one warm machine", n)
	}
}

func TestWarmPoolSettings(t *testing.T) {
	t.Parallel()
	s, err := ec2.ParseSettings(map[string]any{
		"image_id": "ami-12345678", "instance_types": []any{"t3.large"},
		"warm_pool": map[string]any{"size": 3, "runner_version": "2.329.0"},
	})
	if err != nil || s.WarmPool != (ec2.WarmPoolSettings{Size: 3, RunnerVersion: "2.329.0"}) {
		t.Fatalf("ParseSettings = %+v, %v", s.WarmPool, err)
	}
	_, err = ec2.ParseSettings(map[string]any{
		"image_id": "ami-12345678", "instance_types": []any{"t3.large"},
		"warm_pool": map[string]any{"size": 1.5, "runner_version": "latest", "min": 1},
	})
	for _, want := range []string{"warm_pool", "size", "whole number", "runner_version", `"latest"`, "min"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSettings error %v lacks %q", err, want)
		}
	}
}

// The runner a warm machine installs is the one the install script would
// otherwise download: else every warm start downloads it again.
func TestWarmRunnerVersionIsTheInstallScriptsDefault(t *testing.T) {
	t.Parallel()
	if got := ec2.DefaultWarmRunnerVersion; got != metadata.DefaultRunnerVersion {
		t.Fatalf("warm machines install runner %s, the install script %s", got, metadata.DefaultRunnerVersion)
	}
}

// otherImage is a moto x86_64 image with a root device other than w.image.
func otherImage(t *testing.T, w *world) string {
	t.Helper()
	out, err := w.ec2.DescribeImages(context.Background(), &awsec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range out.Images {
		if id := aws.ToString(img.ImageId); id != w.image && aws.ToString(img.RootDeviceName) != "" && img.Architecture == ec2types.ArchitectureValuesX8664 {
			return id
		}
	}
	t.Fatal("moto has only one x86_64 image")
	return ""
}

func idsOnly(instances []ec2types.Instance) []string {
	out := make([]string, len(instances))
	for i, inst := range instances {
		out[i] = aws.ToString(inst.InstanceId)
	}
	return out
}

func TestWarmMachinesServeOnlyCreatesTheyFit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	p := w.warmProvider("fit", w.settings(), 1, calls)
	if _, err := p.RefillWarm(ctx, "fit", w.poolID("fit")); err != nil {
		t.Fatal(err)
	}
	w.powerOff(w.warm("fit"))

	// A Windows runner: the warm machine was prepared by a Linux script.
	win := w.request("fit")
	win.OSType = "windows"
	calls.take()
	if _, err := p.CreateInstance(ctx, win); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if c := calls.take(); c["RunInstances"] != 1 || c["StartInstances"] != 0 {
		t.Errorf("windows create calls = %v, want a launch", c)
	}

	// A create that may launch only another instance type.
	s := w.settings()
	s.InstanceTypes = []string{"m7i.large"}
	other := w.warmProvider("fit", s, 1, calls)
	calls.take()
	if _, err := other.CreateInstance(ctx, w.request("fit")); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if c := calls.take(); c["RunInstances"] != 1 || c["StartInstances"] != 0 {
		t.Errorf("m7i.large create calls = %v, want a launch, not the t3.large warm machine", c)
	}
	if st := w.warm("fit")[0].State.Name; st != ec2types.InstanceStateNameStopped {
		t.Errorf("the warm machine is %s, want still stopped", st)
	}
	// The pool's settings changed to m7i.large: the refill replaces the
	// t3.large machine.
	got, err := other.RefillWarm(ctx, "fit", w.poolID("fit"))
	if err != nil || got.Replaced != 1 || got.Launched != 1 {
		t.Fatalf("RefillWarm after the type change = %+v, %v; want 1 replaced, 1 launched", got, err)
	}
	if warm := w.warm("fit"); len(warm) != 1 || warm[0].InstanceType != "m7i.large" {
		t.Fatalf("warm machines = %v, want one m7i.large", ids(warm))
	}
}

func TestSizeZeroCostsOneDescribeAndEmptiesLeftoverWarmMachines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	none := w.warmProvider("zero", w.settings(), 0, calls)
	calls.take()
	if got, err := none.RefillWarm(ctx, "zero", w.poolID("zero")); err != nil || got != (providers.WarmRefill{}) {
		t.Fatalf("RefillWarm without a warm pool = %+v, %v", got, err)
	}
	if c := calls.take(); !maps.Equal(c, map[string]int{"DescribeInstances": 1}) {
		t.Errorf("RefillWarm without a warm pool made calls %v, want one DescribeInstances", c)
	}

	two := w.warmProvider("zero", w.settings(), 2, calls)
	if _, err := two.RefillWarm(ctx, "zero", w.poolID("zero")); err != nil {
		t.Fatal(err)
	}
	w.powerOff(w.warm("zero"))
	if _, err := none.RefillWarm(ctx, "zero", w.poolID("zero")); err != nil {
		t.Fatal(err)
	}
	if left := w.warm("zero"); len(left) != 0 {
		t.Fatalf("warm machines after size 0: %v, want none", ids(left))
	}
}

func TestANewRunnerVersionReplacesWarmMachines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	if _, err := w.warmProvider("version", w.settings(), 1, calls).RefillWarm(ctx, "version", w.poolID("version")); err != nil {
		t.Fatal(err)
	}
	s := w.settings()
	s.WarmPool.RunnerVersion = "2.999.0"
	p := w.warmProvider("version", s, 1, calls)
	got, err := p.RefillWarm(ctx, "version", w.poolID("version"))
	if err != nil || got.Replaced != 1 || got.Launched != 1 {
		t.Fatalf("RefillWarm = %+v, %v; want the old runner's machine replaced", got, err)
	}
	warm := w.warm("version")
	if len(warm) != 1 || !strings.Contains(w.userData(aws.ToString(warm[0].InstanceId)), "RUNNER_VERSION='2.999.0'") {
		t.Fatalf("warm machines = %v, want one installing 2.999.0", ids(warm))
	}
}

// A pool with a queue-time target sets its stopped machines each pass
// (providers.WarmSizer): the forecast's size above warm_pool.size, the
// setting as the floor below it, and none for a pool with neither.
func TestRefillWarmToTheForecastsSizeWithTheSettingAsFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	calls := &callCounter{}
	p := w.warmProvider("sized", w.settings(), 1, calls)
	cases := []struct {
		name string
		size int
		want int
	}{
		{"the forecast asks for three", 3, 3},
		{"the forecast asks for none: the floor of one", 0, 1},
		{"then two", 2, 2},
	}
	for _, c := range cases {
		if _, err := p.RefillWarmTo(ctx, "sized", w.poolID("sized"), c.size); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w.powerOff(w.warm("sized"))
		if got := w.warm("sized"); len(got) != c.want {
			t.Fatalf("%s: %d warm machines %v, want %d", c.name, len(got), ids(got), c.want)
		}
	}
}
