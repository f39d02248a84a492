package ec2

import (
	"context"
	"slices"
	"strings"
	"time"

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
					m := toInstance(inst)
					m.TakenBackAt = transitionTime(aws.ToString(inst.StateTransitionReason))
					out = append(out, m)
				}
			}
		}
	}
	return out, nil
}

// transitionTime reads the time EC2 puts at the end of an instance's
// state transition reason ("User initiated (2024-01-01 12:00:00 GMT)"):
// for a machine taken back, its termination. EC2 documents no format for
// the text, and it may be empty: anything else is "not known" (zero),
// which the engine takes as "every failure on the machine is the
// interruption's" — never an earlier time than the real one.
func transitionTime(reason string) time.Time {
	open := strings.LastIndexByte(reason, '(')
	if open < 0 || !strings.HasSuffix(reason, " GMT)") {
		return time.Time{}
	}
	at, err := time.Parse("2006-01-02 15:04:05", reason[open+1:len(reason)-len(" GMT)")])
	if err != nil {
		return time.Time{}
	}
	return at.UTC()
}

// takenBack reports whether EC2 ended a spot machine for a spot
// interruption (and not, say, a user's terminate or an instance failure).
func takenBack(inst ec2types.Instance) bool {
	return inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot &&
		inst.StateReason != nil && aws.ToString(inst.StateReason.Code) == spotTermination
}
