package ec2

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

var _ providers.WarmShaper = (*Provider)(nil)

// warmGroup is the stopped machines of one shape a refill keeps: how many,
// the settings a machine of it launches with, and the fingerprints
// (launchShape) of the machines those settings make.
type warmGroup struct {
	shape    *providers.Shape
	count    int
	settings Settings
	prints   map[string]bool
}

// RefillWarmShapes implements providers.WarmShaper: RefillWarm with the
// stopped machines split by shape. The pool's own shape (a nil Shape) is
// floored by warm_pool.size; the total is capped at maxWarmPoolSize, the
// pool's own machines given up first. A shape a warm machine cannot serve
// gets none: one naming its own image (a create starts only a warm machine
// of the pool's current image) or asking for spot (a spot machine cannot
// be stopped), and one no instance type satisfies (logged). A healthy
// machine of a shape no longer asked for is surplus.
func (p *Provider) RefillWarmShapes(ctx context.Context, pool, poolID string, want []providers.WarmShape) (providers.WarmRefill, error) {
	var out providers.WarmRefill
	if err := providers.CheckPool(opRefillWarm, p.poolID, poolID); err != nil {
		return out, err
	}
	warm, err := p.describe(ctx, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{tagWarm}}, tagFilter(tagPoolID, p.poolID))
	if err != nil {
		return out, callError(opRefillWarm, pool, "DescribeInstances", err)
	}
	groups := p.warmGroups(want)
	total := 0
	for _, g := range groups {
		total += g.count
	}
	if total == 0 && len(warm) == 0 {
		// No warm pool: one DescribeInstances a pass, and no image lookup
		// (whose permissions such a pool need not have).
		return out, nil
	}
	// What a machine made now would be; with nothing to keep every warm
	// machine is surplus, whatever it is.
	var now current
	if total > 0 {
		if now, err = p.current(ctx, pool); err != nil {
			return out, &providers.Error{Op: opRefillWarm, Instance: pool, Fault: err.Error(), Err: err}
		}
		groups = p.resolveWarmGroups(ctx, pool, groups, now.rootDevice)
	}
	at := time.Now()
	kept := make([][]ec2types.Instance, len(groups))
	var doomed []string
	for _, inst := range warm {
		g := slices.IndexFunc(groups, func(g warmGroup) bool { return g.prints[tagValue(inst.Tags, tagShape)] })
		check := now
		check.shapes = nil // the shape is matched against the groups below
		reason := check.replaceReason(inst, at)
		if reason == "" && g < 0 && total > 0 {
			reason = "its shape is asked for no more, or the pool's launch settings changed (instance types, disk, template, profile, security groups or runner version)"
		}
		if reason != "" {
			p.log.Info("replacing a warm machine", "pool", pool, "provider_id", aws.ToString(inst.InstanceId), "reason", reason)
			doomed = append(doomed, aws.ToString(inst.InstanceId))
			out.Replaced++
			continue
		}
		if g < 0 {
			doomed = append(doomed, aws.ToString(inst.InstanceId)) // nothing to keep: surplus
			continue
		}
		kept[g] = append(kept[g], inst)
	}
	for i, g := range groups {
		if len(kept[i]) <= g.count {
			continue
		}
		// Stopped ones first: they are what a create would start.
		slices.SortStableFunc(kept[i], func(a, b ec2types.Instance) int {
			return boolRank(stopped(a)) - boolRank(stopped(b))
		})
		for _, inst := range kept[i][g.count:] {
			doomed = append(doomed, aws.ToString(inst.InstanceId))
		}
		kept[i] = kept[i][:g.count]
	}
	if err := p.terminate(ctx, doomed); err != nil {
		return out, callError(opRefillWarm, pool, "TerminateInstances", err)
	}
	for _, k := range kept {
		for _, inst := range k {
			if stopped(inst) {
				out.Ready++
			}
		}
	}
	var userData []byte
	for i, g := range groups {
		for range g.count - len(kept[i]) {
			if userData == nil {
				userData = p.renderWarmUserData()
			}
			name, err := warmName()
			if err != nil {
				return out, err
			}
			if _, err := p.launch(ctx, name, pool, p.warmLaunches(g.settings, name, pool, userData, now.rootDevice)); err != nil {
				// The next pass tries again; no point in hammering a
				// region out of capacity now.
				return out, err
			}
			out.Launched++
		}
	}
	return out, nil
}

// warmGroups are want's shapes a warm machine can serve, with the pool's
// own first and floored by warm_pool.size, at most maxWarmPoolSize in all
// (the pool's own given up first, then the last shapes listed).
func (p *Provider) warmGroups(want []providers.WarmShape) []warmGroup {
	own := warmGroup{count: p.settings.WarmPool.Size}
	var shaped []warmGroup
	for _, w := range want {
		switch {
		case w.Shape == nil:
			own.count = max(own.count, w.Count)
		case w.Count <= 0 || w.Shape.Image != "" || w.Shape.Market == providers.MarketSpot:
		default:
			shaped = append(shaped, warmGroup{shape: w.Shape, count: w.Count})
		}
	}
	over := own.count - maxWarmPoolSize
	for _, g := range shaped {
		over += g.count
	}
	if over > 0 {
		cut := min(over, own.count)
		own.count -= cut
		over -= cut
		for i := len(shaped) - 1; i >= 0 && over > 0; i-- {
			cut := min(over, shaped[i].count)
			shaped[i].count -= cut
			over -= cut
		}
	}
	return append([]warmGroup{own}, shaped...)
}

// resolveWarmGroups fills in each group's settings and fingerprints. A
// shape no instance type satisfies keeps no warm machine (its creates fail
// the same way, and say so); the others are kept.
func (p *Provider) resolveWarmGroups(ctx context.Context, pool string, groups []warmGroup, rootDevice string) []warmGroup {
	out := groups[:0]
	for _, g := range groups {
		s, err := p.shapedSettings(ctx, g.shape)
		if err != nil {
			p.log.Warn("no warm machines of a shape the pool's jobs ask for", "pool", pool, "error", err)
			continue
		}
		g.settings = s
		g.prints = p.launchShapes(p.launches(s, warmNamePrefix, pool, nil, rootDevice))
		out = append(out, g)
	}
	return out
}

var _ providers.WarmKeeper = (*Provider)(nil)

// KeepsWarm implements providers.WarmKeeper: a create starts a stopped
// machine only in a pool with warm_pool.size of 1 or more (create.go), so
// only such a pool may be asked for stopped machines by its forecast;
// warm_pool.size is then their floor.
func (p *Provider) KeepsWarm() bool { return p.settings.WarmPool.Size > 0 }
