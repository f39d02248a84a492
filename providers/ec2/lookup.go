package ec2

import (
	"context"
	"regexp"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// liveStates are the states of a machine that exists. shutting-down and
// terminated machines are gone as far as the port is concerned: deleting
// one is success, getting one is not found.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// find returns the live machines of this controller and pool whose
// instance id, or else whose runfleet:instance tag, is instance. It is
// normally one; a name can match several only if something outside
// runfleet launched with its tags.
//
// A name is looked up only among machines tagged with this pool's id: two
// installations serving one job name its runner alike. An instance id is
// exact and runfleet knows it only from its own create or list, so a
// machine with no pool id tag, launched before runfleet tagged one, is
// still found by it (its recorded delete must not leak it); one tagged
// with another pool's id never is.
func (p *Provider) find(ctx context.Context, instance string) ([]ec2types.Instance, error) {
	if !instanceIDPattern.MatchString(instance) {
		return p.describe(ctx, tagFilter(tagInstance, instance), tagFilter(tagPoolID, p.poolID))
	}
	found, err := p.describe(ctx, ec2types.Filter{Name: aws.String("instance-id"), Values: []string{instance}})
	return slices.DeleteFunc(found, func(inst ec2types.Instance) bool {
		id := tagValue(inst.Tags, tagPoolID)
		return id != "" && id != p.poolID
	}), err
}

// describe returns this controller's live machines that pass filters.
func (p *Provider) describe(ctx context.Context, filters ...ec2types.Filter) ([]ec2types.Instance, error) {
	filters = append(filters,
		tagFilter(tagController, p.controllerID),
		ec2types.Filter{Name: aws.String("instance-state-name"), Values: liveStates},
	)
	pages := awsec2.NewDescribeInstancesPaginator(p.client, &awsec2.DescribeInstancesInput{Filters: filters})
	var out []ec2types.Instance
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				// Checked again here: the state filter and the page are not
				// one atomic read.
				if inst.State != nil && slices.Contains(liveStates, string(inst.State.Name)) {
					out = append(out, inst)
				}
			}
		}
	}
	return out, nil
}

func instanceIDs(instances []ec2types.Instance) []string {
	ids := make([]string, 0, len(instances))
	for _, inst := range instances {
		ids = append(ids, aws.ToString(inst.InstanceId))
	}
	return ids
}

// newest picks the most recently launched machine.
func newest(instances []ec2types.Instance) ec2types.Instance {
	return slices.MaxFunc(instances, func(a, b ec2types.Instance) int {
		return aws.ToTime(a.LaunchTime).Compare(aws.ToTime(b.LaunchTime))
	})
}

// toInstance reports a machine in the port's terms.
func toInstance(inst ec2types.Instance) providers.Instance {
	out := providers.Instance{
		ProviderID: aws.ToString(inst.InstanceId),
		Name:       tagValue(inst.Tags, tagInstance),
		Status:     providers.StatusUnknown,
		OSType:     "linux",
		OSArch:     arch(inst.Architecture),
		// What the machine is, for its price: the type after any failover.
		MachineType: string(inst.InstanceType),
		Market:      providers.MarketOnDemand,
	}
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		out.Market = providers.MarketSpot
	}
	if inst.State != nil {
		out.Status = status(inst.State.Name)
	}
	if inst.Platform == ec2types.PlatformValuesWindows {
		out.OSType = "windows"
	}
	if ip := aws.ToString(inst.PrivateIpAddress); ip != "" {
		out.Addresses = append(out.Addresses, providers.Address{Address: ip, Type: "private"})
	}
	if ip := aws.ToString(inst.PublicIpAddress); ip != "" {
		out.Addresses = append(out.Addresses, providers.Address{Address: ip, Type: "public"})
	}
	return out
}

func status(state ec2types.InstanceStateName) providers.MachineStatus {
	switch state {
	case ec2types.InstanceStateNamePending, ec2types.InstanceStateNameRunning:
		return providers.StatusRunning
	case ec2types.InstanceStateNameStopping, ec2types.InstanceStateNameStopped:
		return providers.StatusStopped
	default:
		return providers.StatusUnknown
	}
}

// arch names an EC2 architecture as GARM does.
func arch(a ec2types.ArchitectureValues) string {
	switch a {
	case ec2types.ArchitectureValuesX8664:
		return "amd64"
	case ec2types.ArchitectureValuesArm64:
		return "arm64"
	case ec2types.ArchitectureValuesI386:
		return "i386"
	default:
		return string(a)
	}
}
