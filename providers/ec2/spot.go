package ec2

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// onDemandOnly drops the spot choices when the engine says the pool's spot
// breaker is open (providers.CreateRequest.OnDemandOnly); a pool without
// spot keeps every choice, as does a request that allows spot.
func onDemandOnly(req providers.CreateRequest, launches []launch) []launch {
	if !req.OnDemandOnly {
		return launches
	}
	return slices.DeleteFunc(slices.Clone(launches), func(l launch) bool {
		return l.input.InstanceMarketOptions != nil && l.input.InstanceMarketOptions.MarketType == ec2types.MarketTypeSpot
	})
}

// spotTermination is the state reason EC2 gives a spot instance it took
// back ("Server.SpotInstanceTermination: Spot instance termination").
const spotTermination = "Server.SpotInstanceTermination"

var _ providers.InterruptionLister = (*Provider)(nil)

// ListInterrupted implements providers.InterruptionLister: this
// controller's spot machines of the pool that EC2 is terminating or has
// terminated for a spot interruption. EC2 keeps a terminated instance
// visible for about an hour, so a reconcile pass every few minutes sees
// each one. One DescribeInstances of the pool's machines that are going
// or gone (stopping and stopped too: a spot instance interrupted with the
// stop behaviour); lifecycle and state reason are checked here, as not
// every EC2 implementation filters on them (moto does not).
func (p *Provider) ListInterrupted(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if err := providers.CheckPool("ListInterrupted", p.poolID, poolID); err != nil {
		return nil, err
	}
	pages := awsec2.NewDescribeInstancesPaginator(p.client, &awsec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		tagFilter(tagController, p.controllerID),
		tagFilter(tagPoolID, p.poolID),
		{Name: aws.String("instance-state-name"), Values: []string{"shutting-down", "terminated", "stopping", "stopped"}},
	}})
	var out []providers.Instance
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, callError("ListInterrupted", poolID, "DescribeInstances", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				if takenBack(inst) {
					out = append(out, toInstance(inst))
				}
			}
		}
	}
	return out, nil
}

// takenBack reports whether EC2 ended a spot machine for a spot
// interruption (and not, say, a user's terminate or an instance failure).
func takenBack(inst ec2types.Instance) bool {
	return inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot &&
		inst.StateReason != nil && aws.ToString(inst.StateReason.Code) == spotTermination
}
