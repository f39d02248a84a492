package ec2_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

func TestCreateTagsTheMachineAndPutsNoCredentialsInUserData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := w.settings()
	s.Tags = map[string]string{"team": "ci"}
	p := w.provider("linux", s)
	req := w.request("linux")

	got, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if !strings.HasPrefix(got.ProviderID, "i-") || got.Name != req.Name || got.Status != providers.StatusRunning {
		t.Fatalf("CreateInstance = %+v, want a running i-… named %s", got, req.Name)
	}

	machines := w.describe(req.Name)
	if len(machines) != 1 {
		t.Fatalf("%d machines tagged %s, want 1", len(machines), req.Name)
	}
	m := machines[0]
	for key, want := range map[string]string{
		"runfleet:controller": w.controllerID,
		"runfleet:pool":       "linux",
		"runfleet:pool-id":    w.poolID("linux"),
		"runfleet:instance":   req.Name,
		"Name":                req.Name,
		"team":                "ci",
	} {
		if got := tagValue(m.Tags, key); got != want {
			t.Errorf("tag %s = %q, want %q", key, got, want)
		}
	}
	if m.InstanceType != "t3.large" || aws.ToString(m.ImageId) != w.image {
		t.Errorf("launched %s from %s, want t3.large from %s", m.InstanceType, aws.ToString(m.ImageId), w.image)
	}
	if !slices.Contains(w.subnets[:2], aws.ToString(m.SubnetId)) {
		t.Errorf("subnet %s is not one of the pool's %v", aws.ToString(m.SubnetId), w.subnets[:2])
	}
	if m.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		t.Error("an on-demand pool launched a spot instance")
	}

	userData := w.userData(got.ProviderID)
	for _, want := range []string{req.MetadataURL, req.InstanceToken, "/install-script"} {
		if !strings.Contains(userData, want) {
			t.Errorf("user data lacks %q:\n%s", want, userData)
		}
	}
	// Only the metadata URL and the token travel: nothing else about the
	// runner, its registration or its repository.
	for _, leaked := range []string{req.CallbackURL, req.RepoURL, "self-hosted", "jit", "JIT", "registration"} {
		if strings.Contains(userData, leaked) {
			t.Errorf("user data carries %q:\n%s", leaked, userData)
		}
	}

	byID, err := p.GetInstance(ctx, got.ProviderID)
	if err != nil {
		t.Fatalf("GetInstance by id: %v", err)
	}
	byName, err := p.GetInstance(ctx, req.Name)
	if err != nil {
		t.Fatalf("GetInstance by name: %v", err)
	}
	if byID.ProviderID != got.ProviderID || byName.ProviderID != got.ProviderID || byName.Name != req.Name {
		t.Errorf("GetInstance by id = %+v, by name = %+v, want %s named %s", byID, byName, got.ProviderID, req.Name)
	}
	if len(byID.Addresses) == 0 || byID.Addresses[0].Type != "private" {
		t.Errorf("GetInstance addresses = %+v, want the private address first", byID.Addresses)
	}
}

func TestCreateRetriedWithTheSameRequestReturnsTheSameMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	launches := &launchRecorder{}
	p := w.provider("linux", w.settings(), launches.middleware)
	req := w.request("linux")

	first, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("first CreateInstance: %v", err)
	}
	second, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("retried CreateInstance: %v", err)
	}
	if second.ProviderID != first.ProviderID {
		t.Fatalf("retry returned %s, first create %s", second.ProviderID, first.ProviderID)
	}
	if n := len(w.describe(req.Name)); n != 1 {
		t.Fatalf("%d machines named %s after a retried create, want 1", n, req.Name)
	}
	if n := len(launches.calls()); n != 1 {
		t.Errorf("RunInstances called %d times, want 1", n)
	}
}

func TestCreateOfANewAttemptReplacesTheEarlierAttemptsMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	p := w.provider("linux", w.settings())
	req := w.request("linux")

	first, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("first CreateInstance: %v", err)
	}
	// The next create attempt carries a new instance token: the first
	// machine's token is no longer accepted, so it must not be reused.
	req.InstanceToken += "-attempt-2"
	second, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("second CreateInstance: %v", err)
	}
	if second.ProviderID == first.ProviderID {
		t.Fatal("a create with another instance token returned the machine of the earlier token")
	}
	live := w.live(req.Name)
	if len(live) != 1 || aws.ToString(live[0].InstanceId) != second.ProviderID {
		t.Fatalf("live machines named %s = %v, want only %s", req.Name, ids(live), second.ProviderID)
	}
	if ud := w.userData(second.ProviderID); !strings.Contains(ud, req.InstanceToken) {
		t.Errorf("the new machine's user data lacks the new token:\n%s", ud)
	}
}

func TestListInstancesReturnsThePoolsLiveMachinesOfThisController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	p := w.provider("blue", w.settings())
	other := newWorld(t) // another controller sharing the account
	elsewhere := w.sameControllerElsewhere()

	var want []string
	for range 2 {
		inst, err := p.CreateInstance(ctx, w.request("blue"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, inst.ProviderID)
	}
	gone, err := p.CreateInstance(ctx, w.request("blue"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteInstance(ctx, gone.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.provider("green", w.settings()).CreateInstance(ctx, w.request("green")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.provider("blue", other.settings()).CreateInstance(ctx, other.request("blue")); err != nil {
		t.Fatal(err)
	}
	if _, err := elsewhere.provider("blue", elsewhere.settings()).CreateInstance(ctx, elsewhere.request("blue")); err != nil {
		t.Fatal(err)
	}

	list, err := p.ListInstances(ctx, w.poolID("blue"))
	if err != nil {
		t.Fatalf("ListInstances: %v", err)
	}
	var got []string
	for _, inst := range list {
		got = append(got, inst.ProviderID)
		if !strings.HasPrefix(inst.Name, "runfleet-blue-") || inst.Status != providers.StatusRunning {
			t.Errorf("listed %+v, want a running runfleet-blue-… machine", inst)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ListInstances(blue) = %v, want %v (not the terminated one, nor other pools', controllers' or installations')", got, want)
	}
	empty, err := w.provider("empty", w.settings()).ListInstances(ctx, w.poolID("empty"))
	if err != nil || len(empty) != 0 {
		t.Fatalf("ListInstances of an empty pool = %v, %v", empty, err)
	}
	for _, poolID := range []string{"blue", w.poolID("green"), ""} {
		if _, err := p.ListInstances(ctx, poolID); !errors.Is(err, providers.ErrWrongPool) {
			t.Errorf("ListInstances(%q) on blue's provider = %v, want ErrWrongPool", poolID, err)
		}
	}
}

// TestAnotherInstallationsMachineIsNeverTouched: staging and production,
// configured alike (one controller id), each have a pool "linux" on one
// account and serve the same job, so their machines share a name. Neither
// lists, replaces or deletes the other's machine, by name or by id.
func TestAnotherInstallationsMachineIsNeverTouched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	staging := newWorld(t)
	production := staging.sameControllerElsewhere()
	stagingP := staging.provider("linux", staging.settings())
	productionP := production.provider("linux", production.settings())

	req := staging.request("linux")
	busy, err := stagingP.CreateInstance(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := productionP.ListInstances(ctx, production.poolID("linux")); err != nil || len(list) != 0 {
		t.Fatalf("production lists %+v, %v; want none of staging's machines", list, err)
	}
	// The same job's runner, in production: a machine of its own. Found by
	// name alone, staging's would have passed for an earlier attempt's
	// and been terminated.
	prodReq := req
	prodReq.PoolID = production.poolID("linux")
	mine, err := productionP.CreateInstance(ctx, prodReq)
	if err != nil {
		t.Fatal(err)
	}
	if mine.ProviderID == busy.ProviderID {
		t.Fatal("production's create returned staging's machine")
	}
	for _, ref := range []string{busy.ProviderID, req.Name} {
		if err := productionP.DeleteInstance(ctx, ref); err != nil {
			t.Fatalf("production DeleteInstance(%s): %v", ref, err)
		}
	}
	if live := staging.live(req.Name); len(live) != 1 || aws.ToString(live[0].InstanceId) != busy.ProviderID {
		t.Fatalf("live machines named %s = %v, want only staging's %s", req.Name, ids(live), busy.ProviderID)
	}
	if _, err := productionP.GetInstance(ctx, busy.ProviderID); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("production GetInstance of staging's machine = %v, want ErrNotFound", err)
	}
}

func TestDeleteByIDByNameAndOfUnknownMachines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	p := w.provider("linux", w.settings())

	byID, err := p.CreateInstance(ctx, w.request("linux"))
	if err != nil {
		t.Fatal(err)
	}
	byName, err := p.CreateInstance(ctx, w.request("linux"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteInstance(ctx, byID.ProviderID); err != nil {
		t.Fatalf("DeleteInstance by id: %v", err)
	}
	if err := p.DeleteInstance(ctx, byName.Name); err != nil {
		t.Fatalf("DeleteInstance by name: %v", err)
	}
	for _, inst := range []providers.Instance{byID, byName} {
		if live := w.live(inst.Name); len(live) != 0 {
			t.Errorf("%s still live after delete: %v", inst.Name, ids(live))
		}
		for _, ref := range []string{inst.ProviderID, inst.Name} {
			if _, err := p.GetInstance(ctx, ref); !errors.Is(err, providers.ErrNotFound) {
				t.Errorf("GetInstance(%s) after delete: %v, want ErrNotFound", ref, err)
			}
			// Deleting what is already gone is success.
			if err := p.DeleteInstance(ctx, ref); err != nil {
				t.Errorf("second DeleteInstance(%s): %v", ref, err)
			}
		}
	}
	for _, unknown := range []string{"runfleet-linux-never-made", "i-0123456789abcdef0"} {
		if err := p.DeleteInstance(ctx, unknown); err != nil {
			t.Errorf("DeleteInstance(%s) of a machine never made: %v", unknown, err)
		}
		_, err := p.GetInstance(ctx, unknown)
		var pe *providers.Error
		if !errors.Is(err, providers.ErrNotFound) || !errors.As(err, &pe) || pe.Op != "GetInstance" {
			t.Errorf("GetInstance(%s) = %v, want a *providers.Error that is ErrNotFound", unknown, err)
		}
	}
}

func TestDeleteNeverTouchesAnotherControllersMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	other := newWorld(t)
	theirs, err := other.provider("linux", other.settings()).CreateInstance(ctx, other.request("linux"))
	if err != nil {
		t.Fatal(err)
	}
	p := w.provider("linux", w.settings())
	for _, ref := range []string{theirs.ProviderID, theirs.Name} {
		if err := p.DeleteInstance(ctx, ref); err != nil {
			t.Fatalf("DeleteInstance(%s): %v", ref, err)
		}
	}
	if err := p.RemoveAllInstances(ctx); err != nil {
		t.Fatal(err)
	}
	if live := other.live(theirs.Name); len(live) != 1 {
		t.Fatalf("another controller's machine was terminated: %v", live)
	}
}

func TestRemoveAllInstancesTerminatesEveryPoolOfThisController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	p := w.provider("blue", w.settings())
	var made []providers.Instance
	for _, pool := range []string{"blue", "blue", "green"} {
		inst, err := w.provider(pool, w.settings()).CreateInstance(ctx, w.request(pool))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, inst)
	}
	if err := p.RemoveAllInstances(ctx); err != nil {
		t.Fatalf("RemoveAllInstances: %v", err)
	}
	for _, inst := range made {
		if live := w.live(inst.Name); len(live) != 0 {
			t.Errorf("%s survived RemoveAllInstances", inst.Name)
		}
	}
	if err := p.RemoveAllInstances(ctx); err != nil {
		t.Fatalf("RemoveAllInstances with nothing left: %v", err)
	}
}

func TestStopAndStartInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	p := w.provider("linux", w.settings())
	inst, err := p.CreateInstance(ctx, w.request("linux"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StopInstance(ctx, inst.Name); err != nil {
		t.Fatalf("StopInstance by name: %v", err)
	}
	if got, err := p.GetInstance(ctx, inst.ProviderID); err != nil || got.Status != providers.StatusStopped {
		t.Fatalf("after stop: %+v, %v; want stopped", got, err)
	}
	if err := p.StartInstance(ctx, inst.ProviderID); err != nil {
		t.Fatalf("StartInstance by id: %v", err)
	}
	if got, err := p.GetInstance(ctx, inst.Name); err != nil || got.Status != providers.StatusRunning {
		t.Fatalf("after start: %+v, %v; want running", got, err)
	}
	if err := p.StartInstance(ctx, "runfleet-linux-never-made"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("StartInstance of an unknown machine = %v, want ErrNotFound", err)
	}
}

func TestCreateRefusesARequestTheMachineCouldNotBootstrapFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	launches := &launchRecorder{}
	p := w.provider("linux", w.settings(), launches.middleware)

	noToken := w.request("linux")
	noToken.InstanceToken = ""
	noURL := w.request("linux")
	noURL.MetadataURL = ""
	for _, req := range []providers.CreateRequest{noToken, noURL} {
		_, err := p.CreateInstance(ctx, req)
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Op != "CreateInstance" || pe.Fault == "" {
			t.Errorf("CreateInstance(%+v) = %v, want a *providers.Error with a fault", req, err)
		}
	}
	if n := len(launches.calls()); n != 0 {
		t.Errorf("RunInstances called %d times for requests that cannot bootstrap", n)
	}
}

func ids(instances []ec2types.Instance) []string {
	var out []string
	for _, inst := range instances {
		out = append(out, aws.ToString(inst.InstanceId)+"("+string(inst.State.Name)+")")
	}
	return out
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// New takes everything from the environment, as on Lambda: here the
// endpoint override AWS_ENDPOINT_URL_EC2 aims it at moto.
func TestNewUsesTheEnvironmentsAWSConfiguration(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	for name, value := range map[string]string{
		"AWS_ENDPOINT_URL_EC2":      testenv.MotoEndpoint(t),
		"AWS_REGION":                testenv.Region,
		"AWS_ACCESS_KEY_ID":         "testing",
		"AWS_SECRET_ACCESS_KEY":     "testing",
		"AWS_SESSION_TOKEN":         "",
		"AWS_PROFILE":               "",
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(name, value)
	}
	p, err := ec2.New(ctx, w.ownership("env"), w.settings())
	if err != nil {
		t.Fatal(err)
	}
	req := w.request("env")
	inst, err := p.CreateInstance(ctx, req)
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	if live := w.live(req.Name); len(live) != 1 || aws.ToString(live[0].InstanceId) != inst.ProviderID {
		t.Fatalf("moto has %v, want %s", ids(live), inst.ProviderID)
	}
}
