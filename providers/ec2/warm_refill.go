package ec2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/runfleet/runfleet/providers"
)

var (
	_ providers.WarmPool  = (*Provider)(nil)
	_ providers.WarmSizer = (*Provider)(nil)
)

const (
	// claimTimeout: a claim still on a warm machine after this was left by
	// a create that died between claiming and starting it (a claim takes
	// seconds); such a machine is replaced.
	claimTimeout = 10 * time.Minute
	// prepareTimeout: a warm machine still running after this did not
	// power off (its preparation failed or hangs) and is replaced.
	prepareTimeout = 30 * time.Minute
	// warmNamePrefix names warm machines for people (the Name tag). The
	// space keeps it from ever being mistaken for a runner's name.
	warmNamePrefix = "runfleet warm "
)

// RefillWarm keeps the pool's stopped warm machines at warm_pool.size:
// it terminates those of an older image than the pool's current one, those
// whose preparation never powered them off, those a dead create left
// claimed, and any beyond the size; then it launches the shortfall
// (on-demand: a one-time spot instance cannot be stopped). A new machine
// counts at once, while it prepares. The reconciler calls it every pass.
func (p *Provider) RefillWarm(ctx context.Context, pool, poolID string) (providers.WarmRefill, error) {
	return p.RefillWarmTo(ctx, pool, poolID, 0)
}

// RefillWarmTo implements providers.WarmSizer: RefillWarm to the larger
// of size (what a pool's forecast asks for) and warm_pool.size (the
// floor), at most maxWarmPoolSize; every machine of the pool's own shape.
func (p *Provider) RefillWarmTo(ctx context.Context, pool, poolID string, size int) (providers.WarmRefill, error) {
	return p.RefillWarmShapes(ctx, pool, poolID, []providers.WarmShape{{Count: size}})
}

// current is what the pool's machines are made of now.
type current struct {
	image      string
	rootDevice string
	shapes     map[string]bool
}

func (p *Provider) current(ctx context.Context, pool string) (current, error) {
	image, err := p.currentImage(ctx)
	if err != nil {
		return current{}, fmt.Errorf("resolving the pool's image: %w", err)
	}
	rootDevice, err := p.rootDevice(ctx, p.settings)
	if err != nil {
		return current{}, err
	}
	return current{image, rootDevice, p.launchShapes(p.launches(p.settings, warmNamePrefix, pool, nil, rootDevice))}, nil
}

// replaceReason says why a warm machine must go, or "". A zero current
// (size 0) finds no fault: such machines go as surplus.
func (c current) replaceReason(inst ec2types.Instance, now time.Time) string {
	if c.image != "" && aws.ToString(inst.ImageId) != c.image {
		return fmt.Sprintf("image %s is not the pool's current %s", aws.ToString(inst.ImageId), c.image)
	}
	if c.shapes != nil && !c.shapes[tagValue(inst.Tags, tagShape)] {
		return "the pool's launch settings changed (instance types, disk, template, profile, security groups or runner version)"
	}
	for _, k := range claimKeys(inst.Tags) {
		at, err := time.Parse(time.RFC3339, tagValue(inst.Tags, k))
		if err != nil || now.Sub(at) > claimTimeout {
			return "claimed by a create that never started it"
		}
	}
	if !stopped(inst) && inst.State != nil && inst.State.Name != ec2types.InstanceStateNameStopping &&
		now.Sub(aws.ToTime(inst.LaunchTime)) > prepareTimeout {
		return fmt.Sprintf("still %s %s after launch: its preparation never powered it off", inst.State.Name, prepareTimeout)
	}
	return ""
}

func stopped(inst ec2types.Instance) bool {
	return inst.State != nil && inst.State.Name == ec2types.InstanceStateNameStopped
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

func warmName() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("warm machine name: %w", err)
	}
	return warmNamePrefix + hex.EncodeToString(b), nil
}

// warmLaunches are the on-demand launch choices of the pool (with
// settings s: the pool's, or a shape's), for a warm
// machine: tagged warm rather than with a runner name, stopping rather
// than terminating when it powers off.
func (p *Provider) warmLaunches(s Settings, name, pool string, userData []byte, rootDevice string) []launch {
	var out []launch
	for _, l := range p.launches(s, name, pool, userData, rootDevice) {
		if l.market == marketSpot {
			continue
		}
		tags := p.warmTags(name, pool, p.launchShape(l.input))
		l.input.TagSpecifications = []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		}
		l.input.InstanceInitiatedShutdownBehavior = ec2types.ShutdownBehaviorStop
		l.input.ClientToken = aws.String(clientToken(l.input))
		out = append(out, l)
	}
	return out
}

func (p *Provider) warmTags(name, pool, shape string) []ec2types.Tag {
	return p.machineTags(pool, map[string]string{tagWarm: warmStopped, tagShape: shape, tagName: name})
}

// currentImage is the AMI a launch for the pool uses now.
func (p *Provider) currentImage(ctx context.Context) (string, error) {
	image := p.settings.ImageID
	switch {
	case strings.HasPrefix(image, "resolve:ssm:"):
		name := strings.TrimPrefix(image, "resolve:ssm:")
		out, err := p.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{name}})
		if err != nil {
			return "", fmt.Errorf("SSM GetParameters %s: %w", name, err)
		}
		if len(out.Parameters) == 0 {
			return "", fmt.Errorf("SSM parameter %s does not exist", name)
		}
		return aws.ToString(out.Parameters[0].Value), nil
	case image != "":
		return image, nil
	case p.settings.LaunchTemplate != "":
		return p.templateImage(ctx)
	}
	return "", nil
}
