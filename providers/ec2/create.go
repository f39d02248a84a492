package ec2

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// CreateInstance launches the machine for req.Name, or returns the one an
// earlier identical request launched. A live machine of that name from a
// different request (an earlier create attempt, whose instance token the
// control plane no longer accepts) is terminated first, so a name never has
// two machines. Capacity errors move on to the next launch choice; any
// other error ends the create.
func (p *Provider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	fail := func(fault string, err error) (providers.Instance, error) {
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: fault, Err: err}
	}
	if req.Name == "" || req.Pool == "" {
		return fail("the create request needs a name and a pool", nil)
	}
	if err := providers.CheckPool(providers.OpCreate, p.poolID, req.PoolID); err != nil {
		return providers.Instance{}, err
	}
	userData, err := p.renderUserData(req)
	if err != nil {
		return fail(err.Error(), err)
	}
	settings, err := p.shapedSettings(ctx, req.Shape)
	if err != nil {
		return fail(err.Error(), err)
	}
	rootDevice, err := p.rootDevice(ctx, settings)
	if err != nil {
		return fail(err.Error(), err)
	}
	// An open spot breaker leaves the on-demand choices only (spot.go).
	launches := onDemandOnly(req, p.launches(settings, req.Name, req.Pool, userData, rootDevice))

	existing, err := p.find(ctx, req.Name)
	if err != nil {
		return fail(fault("DescribeInstances", err), err)
	}
	if inst, ok := launchedBy(existing, launches); ok {
		return created(inst, req.Name), nil
	}
	if inst, ok := claimedBy(existing, userData); ok {
		// A retry of the create that claimed this warm machine: finish
		// starting it rather than start another.
		return p.finishWarmStart(ctx, req, inst, userData)
	}
	if len(existing) > 0 {
		ids := instanceIDs(existing)
		if err := p.terminate(ctx, ids); err != nil {
			return fail(fmt.Sprintf("terminating stale machines %s of an earlier create: %s", strings.Join(ids, ", "), fault("TerminateInstances", err)), err)
		}
	}
	// Warm machines run the Linux preparation script only.
	if p.settings.WarmPool.Size > 0 && osType(req.OSType) == "linux" {
		inst, ok, err := p.startWarm(ctx, req, userData, p.launchShapes(launches))
		if err != nil {
			return inst, err
		}
		if ok {
			return inst, nil
		}
	}
	return p.launch(ctx, req.Name, req.Pool, launches)
}

// launchedBy finds the machine one of launches already started: EC2 keeps
// each machine's client token.
func launchedBy(existing []ec2types.Instance, launches []launch) (ec2types.Instance, bool) {
	for _, inst := range existing {
		token := aws.ToString(inst.ClientToken)
		if token != "" && slices.ContainsFunc(launches, func(l launch) bool { return aws.ToString(l.input.ClientToken) == token }) {
			return inst, true
		}
	}
	return ec2types.Instance{}, false
}

// created reports a machine just launched or found; RunInstances' answer
// may not list the tags yet, so the name is the request's.
func created(inst ec2types.Instance, name string) providers.Instance {
	out := toInstance(inst)
	out.Name = name
	return out
}

// terminate ends machines by id; ones already gone are success.
func (p *Provider) terminate(ctx context.Context, ids []string) error {
	// TerminateInstances takes at most 1000 ids per call.
	for chunk := range slices.Chunk(ids, 1000) {
		_, err := p.client.TerminateInstances(ctx, &awsec2.TerminateInstancesInput{InstanceIds: chunk})
		switch {
		case err == nil:
		case errorCode(err) != instanceNotFoundCode:
			return err
		case len(chunk) > 1:
			// One unknown id fails the whole call: end the others one by one.
			if err := p.terminateEach(ctx, chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Provider) terminateEach(ctx context.Context, ids []string) error {
	for _, id := range ids {
		_, err := p.client.TerminateInstances(ctx, &awsec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil && errorCode(err) != instanceNotFoundCode {
			return err
		}
	}
	return nil
}

// instanceNotFoundCode is EC2's answer for an instance id it does not know
// (or no longer lists).
const instanceNotFoundCode = "InvalidInstanceID.NotFound"
