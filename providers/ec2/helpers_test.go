package ec2_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// world is what one test sees of moto: one runfleet installation, with its
// own controller id (moto's state is shared by the whole test process, so
// every test tags its machines apart) and installation id, and a raw EC2
// client to check what the provider did.
type world struct {
	t              *testing.T
	controllerID   string
	installationID string
	ec2            *awsec2.Client
	image          string
	subnets        []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	client := awsec2.NewFromConfig(testenv.AWSConfig(t))
	image, subnets := motoFixtures(t, client)
	return &world{
		t:              t,
		controllerID:   strings.ToLower(testenv.UniqueName(t, "ctl")),
		installationID: randomHex(t, 8),
		ec2:            client,
		image:          image,
		subnets:        subnets,
	}
}

// sameControllerElsewhere is another installation configured with this
// world's controller id (staging and production from one config).
func (w *world) sameControllerElsewhere() *world {
	other := *w
	other.installationID = randomHex(w.t, 8)
	return &other
}

// poolID is the pool's provider-side id in this world's installation.
func (w *world) poolID(pool string) string {
	return runner.PoolID(w.installationID, pool)
}

var (
	fixturesOnce    sync.Once
	fixtureImage    string
	fixtureSubnets  []string
	fixturesProblem error
)

// motoFixtures finds an AMI with a root device and the default VPC's
// subnets, which moto has from the start.
func motoFixtures(t *testing.T, client *awsec2.Client) (string, []string) {
	t.Helper()
	fixturesOnce.Do(func() {
		ctx := context.Background()
		images, err := client.DescribeImages(ctx, &awsec2.DescribeImagesInput{Owners: []string{"amazon"}})
		if err != nil {
			fixturesProblem = err
			return
		}
		for _, img := range images.Images {
			if aws.ToString(img.RootDeviceName) != "" && img.Architecture == ec2types.ArchitectureValuesX8664 {
				fixtureImage = aws.ToString(img.ImageId)
				break
			}
		}
		subnets, err := client.DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{
			Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}},
		})
		if err != nil {
			fixturesProblem = err
			return
		}
		for _, s := range subnets.Subnets {
			fixtureSubnets = append(fixtureSubnets, aws.ToString(s.SubnetId))
		}
		slices.Sort(fixtureSubnets)
		if fixtureImage == "" || len(fixtureSubnets) < 3 {
			fixturesProblem = errors.New("moto has no x86_64 image with a root device, or fewer than 3 default subnets")
		}
	})
	if fixturesProblem != nil {
		t.Fatalf("moto fixtures: %v", fixturesProblem)
	}
	return fixtureImage, fixtureSubnets
}

// settings are the test's baseline provider settings.
func (w *world) settings() ec2.Settings {
	return ec2.Settings{
		ImageID:       w.image,
		InstanceTypes: []string{"t3.large"},
		SubnetIDs:     w.subnets[:2],
	}
}

// provider builds pool's provider on moto; apiOptions add SDK middleware
// (the fault injection of the fallback tests).
func (w *world) provider(pool string, s ec2.Settings, apiOptions ...func(*middleware.Stack) error) *ec2.Provider {
	w.t.Helper()
	cfg := testenv.AWSConfig(w.t)
	cfg.APIOptions = append(cfg.APIOptions, apiOptions...)
	p, err := ec2.NewWithConfig(cfg, w.ownership(pool), s)
	if err != nil {
		w.t.Fatalf("NewWithConfig: %v", err)
	}
	return p
}

func (w *world) ownership(pool string) ec2.Ownership {
	return ec2.Ownership{ControllerID: w.controllerID, PoolID: w.poolID(pool)}
}

// request is a create request for a fresh machine name in pool.
func (w *world) request(pool string) providers.CreateRequest {
	return providers.CreateRequest{
		Name:          "runfleet-" + pool + "-" + randomHex(w.t, 6),
		Pool:          pool,
		PoolID:        w.poolID(pool),
		Labels:        []string{"self-hosted", "linux", "x64"},
		RepoURL:       "https://github.com/octo-org/hello",
		MetadataURL:   "https://control.example/metadata",
		CallbackURL:   "https://control.example/callbacks",
		InstanceToken: "instance-token-" + randomHex(w.t, 8),
		OSType:        "linux",
		Arch:          "amd64",
	}
}

// describe returns the machines (in any state) tagged with name.
func (w *world) describe(name string) []ec2types.Instance {
	w.t.Helper()
	out, err := w.ec2.DescribeInstances(context.Background(), &awsec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:runfleet:instance"), Values: []string{name}}},
	})
	if err != nil {
		w.t.Fatalf("DescribeInstances: %v", err)
	}
	// Tests share one moto and may reuse names: keep this world's machines,
	// the ones whose pool id is the one this installation gives their pool.
	var all []ec2types.Instance
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if instTag(inst, "runfleet:pool-id") == w.poolID(instTag(inst, "runfleet:pool")) {
				all = append(all, inst)
			}
		}
	}
	return all
}

func instTag(inst ec2types.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// live returns the machines tagged with name that are not terminating.
func (w *world) live(name string) []ec2types.Instance {
	var out []ec2types.Instance
	for _, inst := range w.describe(name) {
		switch inst.State.Name {
		case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
		default:
			out = append(out, inst)
		}
	}
	return out
}

func (w *world) userData(id string) string {
	w.t.Helper()
	out, err := w.ec2.DescribeInstanceAttribute(context.Background(), &awsec2.DescribeInstanceAttributeInput{
		InstanceId: aws.String(id),
		Attribute:  ec2types.InstanceAttributeNameUserData,
	})
	if err != nil {
		w.t.Fatalf("DescribeInstanceAttribute userData: %v", err)
	}
	if out.UserData == nil {
		return ""
	}
	data, err := base64.StdEncoding.DecodeString(aws.ToString(out.UserData.Value))
	if err != nil {
		w.t.Fatalf("user data is not base64: %v", err)
	}
	return string(data)
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// launchAttempt is one RunInstances call the provider made.
type launchAttempt struct {
	Spot         bool
	InstanceType string
	Subnet       string
}

// launchRecorder is SDK middleware that records every RunInstances call
// and fails those fail picks with the EC2 error code it returns — fault
// injection inside the real SDK stack, in front of a real (moto) EC2.
type launchRecorder struct {
	mu       sync.Mutex
	attempts []launchAttempt
	fail     func(launchAttempt) string
}

func (r *launchRecorder) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("runfleetTestLaunchFaults",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			run, ok := in.Parameters.(*awsec2.RunInstancesInput)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			a := launchAttempt{
				Spot:         run.InstanceMarketOptions != nil && run.InstanceMarketOptions.MarketType == ec2types.MarketTypeSpot,
				InstanceType: string(run.InstanceType),
				Subnet:       aws.ToString(run.SubnetId),
			}
			r.mu.Lock()
			r.attempts = append(r.attempts, a)
			r.mu.Unlock()
			if r.fail != nil {
				if code := r.fail(a); code != "" {
					return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: code, Message: "injected by the test for " + a.InstanceType}
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

func (r *launchRecorder) calls() []launchAttempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.attempts)
}
