package ec2

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// tagShape fingerprints the machine a warm launch made: what of its
// launch request a job's create cares about. A create claims only a warm
// machine whose shape one of its own launch choices has, and the refill
// replaces warm machines whose shape no current choice has — so a change
// of instance types, disk, template, profile or security groups, or a job
// asking for another shape, never gets a machine made to the old one.
const tagShape = tagPrefix + "shape"

// launchShape is the fingerprint of in's machine. Subnet and market are
// left out (any subnet serves; warm machines are on-demand), and so are
// tags, user data and the client token, which differ per machine. The
// image is in as written: a resolve:ssm parameter's current value is
// compared separately (currentImage).
//
// The runner version warm machines install is in too: a warm machine with
// an older runner is replaced when runner_version changes.
func (p *Provider) launchShape(in *awsec2.RunInstancesInput) string {
	shape := struct {
		Image         *string
		Type          ec2types.InstanceType
		Template      *ec2types.LaunchTemplateSpecification
		Disks         []ec2types.BlockDeviceMapping
		Profile       *ec2types.IamInstanceProfileSpecification
		Groups        []string
		Metadata      *ec2types.InstanceMetadataOptionsRequest
		RunnerVersion string
	}{in.ImageId, in.InstanceType, in.LaunchTemplate, in.BlockDeviceMappings, in.IamInstanceProfile, in.SecurityGroupIds, in.MetadataOptions, p.settings.WarmPool.runnerVersion()}
	// The request types are plain data; encoding them cannot fail.
	data, _ := json.Marshal(&shape)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// launchShapes are the shapes of launches.
func (p *Provider) launchShapes(launches []launch) map[string]bool {
	out := make(map[string]bool, len(launches))
	for _, l := range launches {
		out[p.launchShape(l.input)] = true
	}
	return out
}
