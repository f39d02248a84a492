package ec2

import (
	"context"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/runfleet/runfleet/providers"
)

// DeleteInstance terminates the machine with that instance id or runfleet
// name. A machine that is gone, or was never made, is success.
func (p *Provider) DeleteInstance(ctx context.Context, instance string) error {
	found, err := p.find(ctx, instance)
	if err != nil {
		return callError(providers.OpDelete, instance, "DescribeInstances", err)
	}
	if err := p.terminate(ctx, instanceIDs(found)); err != nil {
		return callError(providers.OpDelete, instance, "TerminateInstances", err)
	}
	return nil
}

// GetInstance reports the machine with that instance id or runfleet name;
// the error is providers.ErrNotFound when it does not exist or is
// terminating.
func (p *Provider) GetInstance(ctx context.Context, instance string) (providers.Instance, error) {
	found, err := p.find(ctx, instance)
	if err != nil {
		return providers.Instance{}, callError(providers.OpGet, instance, "DescribeInstances", err)
	}
	if len(found) == 0 {
		return providers.Instance{}, notFound(providers.OpGet, instance)
	}
	return toInstance(newest(found)), nil
}

// ListInstances reports this controller's live machines tagged with
// poolID, which must be this provider's pool. Warm machines are left out:
// no runner's, they must look neither like orphans to the reconciler nor
// like runners.
func (p *Provider) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if err := providers.CheckPool(providers.OpList, p.poolID, poolID); err != nil {
		return nil, err
	}
	found, err := p.describe(ctx, tagFilter(tagPoolID, poolID))
	if err != nil {
		return nil, callError(providers.OpList, poolID, "DescribeInstances", err)
	}
	out := make([]providers.Instance, 0, len(found))
	for _, inst := range found {
		if tagValue(inst.Tags, tagWarm) != "" {
			continue
		}
		out = append(out, toInstance(inst))
	}
	return out, nil
}

// RemoveAllInstances terminates every live machine tagged with this
// controller, in every pool (GARM's meaning).
func (p *Provider) RemoveAllInstances(ctx context.Context) error {
	found, err := p.describe(ctx)
	if err != nil {
		return callError(providers.OpRemoveAll, p.controllerID, "DescribeInstances", err)
	}
	if err := p.terminate(ctx, instanceIDs(found)); err != nil {
		return callError(providers.OpRemoveAll, p.controllerID, "TerminateInstances", err)
	}
	return nil
}

// StartInstance starts a stopped machine.
func (p *Provider) StartInstance(ctx context.Context, instance string) error {
	return p.startStop(ctx, providers.OpStart, "StartInstances", instance, func(ids []string) error {
		_, err := p.client.StartInstances(ctx, &awsec2.StartInstancesInput{InstanceIds: ids})
		return err
	})
}

// StopInstance stops a machine. EC2 refuses to stop one-time spot
// instances; that refusal is the error.
func (p *Provider) StopInstance(ctx context.Context, instance string) error {
	return p.startStop(ctx, providers.OpStop, "StopInstances", instance, func(ids []string) error {
		_, err := p.client.StopInstances(ctx, &awsec2.StopInstancesInput{InstanceIds: ids})
		return err
	})
}

func (p *Provider) startStop(ctx context.Context, op, call, instance string, do func(ids []string) error) error {
	found, err := p.find(ctx, instance)
	if err != nil {
		return callError(op, instance, "DescribeInstances", err)
	}
	if len(found) == 0 {
		return notFound(op, instance)
	}
	if err := do(instanceIDs(found)); err != nil {
		return callError(op, instance, call, err)
	}
	return nil
}
