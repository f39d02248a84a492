package ec2

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// Tags of the stopped warm pool. A warm machine carries tagWarm and no
// tagInstance until a create claims it; claims are tagClaimPrefix+<the
// claiming request's fingerprint>, and tagRequest is that fingerprint on a
// claimed machine, so a retried create finds the machine it claimed.
const (
	tagWarm        = tagPrefix + "warm"
	tagClaimPrefix = tagPrefix + "claim:"
	tagRequest     = tagPrefix + "request"
	warmStopped    = "stopped"
)

const (
	// defaultClaimSettle is the pause between writing a claim and reading
	// the claims back: EC2's reads may lag its writes by about a second.
	defaultClaimSettle = 2 * time.Second
	// maxClaimTries bounds the warm machines one create tries to claim
	// before it launches one instead.
	maxClaimTries = 3
)

// requestTag fingerprints one create request by its user data, which
// holds the attempt's instance token: a retry of the same request has the
// same fingerprint, the next attempt a new one.
func requestTag(userData []byte) string {
	sum := sha256.Sum256(userData)
	return hex.EncodeToString(sum[:16])
}

// claimedBy finds the warm machine an earlier try of this very request
// claimed.
func claimedBy(existing []ec2types.Instance, userData []byte) (ec2types.Instance, bool) {
	want := requestTag(userData)
	for _, inst := range existing {
		if tagValue(inst.Tags, tagRequest) == want {
			return inst, true
		}
	}
	return ec2types.Instance{}, false
}

// startWarm claims a stopped warm machine of the pool's current image and
// starts it as req's runner. ok is false when none could be claimed; the
// caller then launches one. Failures to find or claim one are logged and
// fall back to a launch: the warm pool only makes a create faster.
//
// EC2 has no compare-and-set, so a claim is a two-flag protocol on tags:
// each claimer writes its own claim tag (distinct keys: no claim
// overwrites another), waits claimSettle, reads the machine back, and wins
// only if its claim is the only one and the machine is still unclaimed.
// Of two claimers, the one that reads second sees the other's tag (it was
// written before the first one read, hence before the second read), so at
// most one wins; both may lose, and both then launch. A loser removes its
// tag; a winner keeps it, so a claimer still later sees it and loses.
//
// shapes are the shapes (launchShape) of the machines this create may
// launch: a warm machine of another shape does not serve it.
func (p *Provider) startWarm(ctx context.Context, req providers.CreateRequest, userData []byte, shapes map[string]bool) (providers.Instance, bool, error) {
	log := p.log.With("instance", req.Name, "pool", req.Pool)
	warm, err := p.describe(ctx, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{tagWarm}}, tagFilter(tagPoolID, p.poolID))
	if err != nil {
		log.Warn("cannot list warm machines; launching instead", "error", fault("DescribeInstances", err))
		return providers.Instance{}, false, nil
	}
	ready := slices.DeleteFunc(warm, func(inst ec2types.Instance) bool {
		return !claimable(inst) || !shapes[tagValue(inst.Tags, tagShape)]
	})
	if len(ready) > 0 {
		image, err := p.currentImage(ctx)
		if err != nil {
			log.Warn("cannot resolve the pool's image; launching instead of starting a warm machine", "error", err)
			return providers.Instance{}, false, nil
		}
		ready = slices.DeleteFunc(ready, func(inst ec2types.Instance) bool { return aws.ToString(inst.ImageId) != image })
	}
	// Each create tries the machines in its own order, so concurrent
	// creates mostly go for different ones.
	order := func(inst ec2types.Instance) uint32 {
		h := fnv.New32a()
		h.Write([]byte(req.Name + aws.ToString(inst.InstanceId)))
		return h.Sum32()
	}
	slices.SortFunc(ready, func(a, b ec2types.Instance) int { return int(int64(order(a)) - int64(order(b))) })
	for _, inst := range ready[:min(len(ready), maxClaimTries)] {
		id := aws.ToString(inst.InstanceId)
		won, err := p.claim(ctx, req, id, userData)
		if err != nil {
			log.Warn("claiming a warm machine failed; trying the next", "provider_id", id, "error", err)
			continue
		}
		if won {
			log.Info("claimed a stopped warm machine", "provider_id", id)
			started, err := p.finishWarmStart(ctx, req, inst, userData)
			return started, err == nil, err
		}
		log.Info("another create claimed the warm machine first", "provider_id", id)
	}
	if len(ready) == 0 {
		log.Info("no stopped warm machine ready; launching")
	}
	return providers.Instance{}, false, nil
}

// claimable: stopped and unclaimed.
func claimable(inst ec2types.Instance) bool {
	if inst.State == nil || inst.State.Name != ec2types.InstanceStateNameStopped {
		return false
	}
	return tagValue(inst.Tags, tagInstance) == "" && len(claimKeys(inst.Tags)) == 0
}

func claimKeys(tags []ec2types.Tag) []string {
	var keys []string
	for _, t := range tags {
		if k := aws.ToString(t.Key); strings.HasPrefix(k, tagClaimPrefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// claim runs the two-flag protocol on one machine. On a win the machine
// is tagged as req's runner at once, so cleanup by name (a failed or
// abandoned create) finds it; finishWarmStart removes the warm tag.
func (p *Provider) claim(ctx context.Context, req providers.CreateRequest, id string, userData []byte) (bool, error) {
	mine := tagClaimPrefix + requestTag(userData)
	_, err := p.client.CreateTags(ctx, &awsec2.CreateTagsInput{
		Resources: []string{id},
		Tags:      []ec2types.Tag{{Key: aws.String(mine), Value: aws.String(time.Now().UTC().Format(time.RFC3339))}},
	})
	if err != nil {
		return false, fmt.Errorf("%s", fault("CreateTags", err))
	}
	if p.claimSettle > 0 {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(p.claimSettle):
		}
	}
	found, err := p.describe(ctx, ec2types.Filter{Name: aws.String("instance-id"), Values: []string{id}})
	if err != nil {
		return false, fmt.Errorf("%s", fault("DescribeInstances", err))
	}
	won := len(found) == 1 && found[0].State != nil && found[0].State.Name == ec2types.InstanceStateNameStopped &&
		tagValue(found[0].Tags, tagWarm) != "" && tagValue(found[0].Tags, tagInstance) == "" &&
		slices.Equal(claimKeys(found[0].Tags), []string{mine})
	if !won {
		_, err := p.client.DeleteTags(ctx, &awsec2.DeleteTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String(mine)}}})
		if err != nil {
			// The refill terminates a warm machine whose claim is older
			// than claimTimeout, so a stray tag costs one machine, later.
			p.log.Warn("removing a lost claim failed", "instance", req.Name, "pool", req.Pool, "provider_id", id, "error", fault("DeleteTags", err))
		}
		return false, nil
	}
	_, err = p.client.CreateTags(ctx, &awsec2.CreateTagsInput{
		Resources: []string{id},
		Tags: []ec2types.Tag{
			{Key: aws.String(tagInstance), Value: aws.String(req.Name)},
			{Key: aws.String(tagName), Value: aws.String(req.Name)},
			{Key: aws.String(tagPool), Value: aws.String(req.Pool)},
			{Key: aws.String(tagRequest), Value: aws.String(requestTag(userData))},
		},
	})
	if err != nil {
		return false, fmt.Errorf("%s", fault("CreateTags", err))
	}
	return true, nil
}

// finishWarmStart gives a claimed machine req's bootstrap and starts it.
// User data can be changed only while the machine is stopped; a retry
// that finds it started already just reports it.
func (p *Provider) finishWarmStart(ctx context.Context, req providers.CreateRequest, inst ec2types.Instance, userData []byte) (providers.Instance, error) {
	id := aws.ToString(inst.InstanceId)
	fail := func(call string, err error) (providers.Instance, error) {
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: "starting warm machine " + id + ": " + fault(call, err), Err: err}
	}
	if tagValue(inst.Tags, tagWarm) != "" {
		// Until this goes, ListInstances hides the machine as warm.
		if _, err := p.client.DeleteTags(ctx, &awsec2.DeleteTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String(tagWarm)}}}); err != nil {
			return fail("DeleteTags", err)
		}
	}
	if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameStopped {
		// EC2 takes this blob as the base64 text of the user data (as
		// RunInstances' UserData string), and the SDK base64-encodes blobs
		// on the wire once more: without the encoding here EC2 refuses it
		// as InvalidUserData.Malformed.
		_, err := p.client.ModifyInstanceAttribute(ctx, &awsec2.ModifyInstanceAttributeInput{
			InstanceId: aws.String(id),
			UserData:   &ec2types.SecureBlobAttributeValue{Value: []byte(base64.StdEncoding.EncodeToString(userData))},
		})
		if err != nil {
			return fail("ModifyInstanceAttribute", err)
		}
		// Warm machines stop when they power off; a runner's machine ends.
		_, err = p.client.ModifyInstanceAttribute(ctx, &awsec2.ModifyInstanceAttributeInput{
			InstanceId: aws.String(id),
			Attribute:  ec2types.InstanceAttributeNameInstanceInitiatedShutdownBehavior,
			Value:      aws.String(string(ec2types.ShutdownBehaviorTerminate)),
		})
		if err != nil {
			return fail("ModifyInstanceAttribute", err)
		}
		if _, err := p.client.StartInstances(ctx, &awsec2.StartInstancesInput{InstanceIds: []string{id}}); err != nil {
			return fail("StartInstances", err)
		}
	}
	out := created(inst, req.Name)
	out.Status = providers.StatusRunning
	return out, nil
}
