package ec2

import (
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The tags that mark what runfleet made. The IAM policy in
// docs/providers-ec2.md scopes every mutating call to tagController, so
// these names are part of the provider's contract with operators.
// Machines are found by tagPoolID; tagPool is the pool's name, for people.
const (
	tagPrefix     = "runfleet:"
	tagController = tagPrefix + "controller"
	tagPool       = tagPrefix + "pool"
	tagPoolID     = tagPrefix + "pool-id"
	tagInstance   = tagPrefix + "instance"
	tagName       = "Name"
)

// launchTags are the tags of one machine and its volumes: runfleet's own
// and the pool's extra tags, sorted by key so a launch request (and its
// client token) is the same every time.
func (p *Provider) launchTags(name, pool string) []ec2types.Tag {
	return p.machineTags(pool, map[string]string{tagInstance: name, tagName: name})
}

// machineTags are the pool's extra tags, runfleet's ownership tags and
// own, sorted by key.
func (p *Provider) machineTags(pool string, own map[string]string) []ec2types.Tag {
	all := maps.Clone(p.settings.Tags)
	if all == nil {
		all = make(map[string]string, 4+len(own))
	}
	all[tagController] = p.controllerID
	all[tagPool] = pool
	all[tagPoolID] = p.poolID
	maps.Copy(all, own)
	tags := make([]ec2types.Tag, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(all[k])})
	}
	return tags
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

func tagFilter(key, value string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String("tag:" + key), Values: []string{value}}
}
