package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/runfleet/runfleet/providers"
)

// maxLaunchAttempts caps the RunInstances calls of one create, whatever
// the number of subnets, instance types and markets: a create runs inside
// the pool's bootstrap timeout, and a region out of capacity for the first
// two dozen choices rarely has it for the rest. The engine retries the
// create with backoff after a CapacityError, so the cap delays the job;
// it never drops it.
const maxLaunchAttempts = 24

// launch tries each launch choice in order — subnets, then instance
// types, then on-demand after spot — until one starts the machine. A
// capacity error moves on to the next choice, logged with its reason and
// reported to the failover hook; any other error stops at once with a
// *LaunchRefusedError. Running out of choices, or hitting
// maxLaunchAttempts, is a *CapacityError.
func (p *Provider) launch(ctx context.Context, name, pool string, launches []launch) (providers.Instance, error) {
	var tried []Attempt
	var last error
	skipSpot := false
	for i, l := range launches {
		if skipSpot && l.market == marketSpot {
			continue
		}
		if len(tried) == maxLaunchAttempts {
			return providers.Instance{}, p.noCapacity(name, tried, true, last)
		}
		if err := ctx.Err(); err != nil {
			return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: name, Fault: "cancelled before a launch choice had capacity", Err: err}
		}
		out, err := p.client.RunInstances(ctx, l.input, failFastOnCapacity)
		if err == nil {
			if len(out.Instances) == 0 {
				return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: name, Fault: "EC2 RunInstances returned no instance"}
			}
			return created(out.Instances[0], name), nil
		}
		code := errorCode(err)
		attempt := Attempt{Market: l.market, InstanceType: l.instanceType, Subnet: l.subnet, Code: code}
		log := p.log.With("instance", name, "pool", pool, "subnet", l.subnet, "instance_type", l.instanceType, "market", l.market, "error_code", code)
		if !isCapacityError(err) {
			log.Warn("EC2 refused the launch; no other choice would succeed", "error", err)
			refused := &LaunchRefusedError{Attempt: attempt, Err: err}
			return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: name, Fault: refused.Error(), Err: refused}
		}
		tried = append(tried, attempt)
		last = err
		skipSpot = skipSpot || (l.market == marketSpot && spotWideCodes[code])
		next, ok := nextLaunch(launches[i+1:], skipSpot)
		if !ok {
			log.Warn("no EC2 capacity for the last launch choice", "error", err)
			break
		}
		log.Info("no EC2 capacity for this launch choice; failing over", "next", next.choice, "error", err)
		if p.onFailover != nil {
			p.onFailover(pool, code)
		}
	}
	return providers.Instance{}, p.noCapacity(name, tried, false, last)
}

// nextLaunch is the choice the loop tries after a failure.
func nextLaunch(rest []launch, skipSpot bool) (launch, bool) {
	for _, l := range rest {
		if !skipSpot || l.market != marketSpot {
			return l, true
		}
	}
	return launch{}, false
}

func (p *Provider) noCapacity(name string, tried []Attempt, capped bool, last error) error {
	ce := &CapacityError{Attempts: tried, Capped: capped, Last: last}
	return &providers.Error{Op: providers.OpCreate, Instance: name, Fault: ce.Error(), Err: ce}
}

// failFastOnCapacity keeps the SDK from retrying a capacity error: EC2
// sends some as 5xx, which the SDK's standard retryer would repeat with
// backoff for the same choice, while the next choice may have capacity
// now.
func failFastOnCapacity(o *awsec2.Options) {
	o.Retryer = capacityNotRetried{o.Retryer}
}

type capacityNotRetried struct{ aws.Retryer }

func (r capacityNotRetried) IsErrorRetryable(err error) bool {
	return !isCapacityError(err) && r.Retryer.IsErrorRetryable(err)
}
