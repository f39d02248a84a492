package ec2

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// launch is one way to start the machine: a market, instance type and
// subnet, as a complete RunInstances request with its own client token.
type launch struct {
	input *awsec2.RunInstancesInput
	// choice names the market, instance type and subnet in faults.
	choice string
	// market, instanceType and subnet are the choice, for logs and
	// CapacityError.
	market, instanceType, subnet string
}

// The markets a launch choice is made in, as logs and errors name them.
const (
	marketSpot     = "spot"
	marketOnDemand = "on-demand"
)

// launches lists the ways to start machine name, in the order to try them:
// spot before on-demand (every spot choice first, as spot is the point of
// setting it), then instance types in their configured order, then
// subnets, starting at one picked by the name so machines spread. s are
// the settings of this create (shapedSettings: a shaped job's types,
// image, disk and market).
func (p *Provider) launches(s Settings, name, pool string, userData []byte, rootDevice string) []launch {
	markets := []bool{false}
	if s.Spot {
		markets = []bool{true, false}
	}
	types := s.InstanceTypes
	if len(types) == 0 {
		types = []string{""} // the launch template's
	}
	subnets := rotate(s.SubnetIDs, name)
	if len(subnets) == 0 {
		subnets = []string{""} // the template's, or the default VPC's
	}
	tags := p.launchTags(name, pool)
	var out []launch
	for _, spot := range markets {
		for _, instanceType := range types {
			for _, subnet := range subnets {
				in := baseInput(s, userData, rootDevice, tags)
				if instanceType != "" {
					in.InstanceType = ec2types.InstanceType(instanceType)
				}
				if subnet != "" {
					in.SubnetId = aws.String(subnet)
				}
				if spot {
					in.InstanceMarketOptions = &ec2types.InstanceMarketOptionsRequest{
						MarketType: ec2types.MarketTypeSpot,
						SpotOptions: &ec2types.SpotMarketOptions{
							SpotInstanceType:             ec2types.SpotInstanceTypeOneTime,
							InstanceInterruptionBehavior: ec2types.InstanceInterruptionBehaviorTerminate,
						},
					}
				}
				in.ClientToken = aws.String(clientToken(in))
				market := marketOnDemand
				if spot {
					market = marketSpot
				}
				out = append(out, launch{input: in, choice: choiceName(spot, instanceType, subnet), market: market, instanceType: instanceType, subnet: subnet})
			}
		}
	}
	return out
}

// baseInput is the part of every launch request that does not vary.
func baseInput(s Settings, userData []byte, rootDevice string, tags []ec2types.Tag) *awsec2.RunInstancesInput {
	in := &awsec2.RunInstancesInput{
		MinCount: aws.Int32(1),
		MaxCount: aws.Int32(1),
		UserData: aws.String(base64.StdEncoding.EncodeToString(userData)),
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
		},
		// A runner that shuts its machine down is done with it.
		InstanceInitiatedShutdownBehavior: ec2types.ShutdownBehaviorTerminate,
	}
	if s.ImageID != "" {
		in.ImageId = aws.String(s.ImageID)
	}
	if s.LaunchTemplate != "" {
		spec := &ec2types.LaunchTemplateSpecification{}
		if launchTemplateIDPattern.MatchString(s.LaunchTemplate) {
			spec.LaunchTemplateId = aws.String(s.LaunchTemplate)
		} else {
			spec.LaunchTemplateName = aws.String(s.LaunchTemplate)
		}
		if s.LaunchTemplateVersion != "" {
			spec.Version = aws.String(s.LaunchTemplateVersion)
		}
		in.LaunchTemplate = spec
	} else {
		// Without a template runfleet chooses the metadata options: session
		// tokens only (IMDSv2).
		in.MetadataOptions = &ec2types.InstanceMetadataOptionsRequest{
			HttpTokens:   ec2types.HttpTokensStateRequired,
			HttpEndpoint: ec2types.InstanceMetadataEndpointStateEnabled,
		}
	}
	if len(s.SecurityGroupIDs) > 0 {
		in.SecurityGroupIds = s.SecurityGroupIDs
	}
	if profile := s.IAMInstanceProfile; profile != "" {
		in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{}
		if strings.HasPrefix(profile, "arn:") {
			in.IamInstanceProfile.Arn = aws.String(profile)
		} else {
			in.IamInstanceProfile.Name = aws.String(profile)
		}
	}
	if s.RootVolumeSize > 0 {
		in.BlockDeviceMappings = []ec2types.BlockDeviceMapping{{
			DeviceName: aws.String(rootDevice),
			Ebs: &ec2types.EbsBlockDevice{
				VolumeSize:          aws.Int32(s.RootVolumeSize),
				VolumeType:          ec2types.VolumeTypeGp3,
				DeleteOnTermination: aws.Bool(true),
			},
		}}
	}
	return in
}

// clientToken derives RunInstances' idempotency token from the whole
// request, which names the machine in its tags. A retry of the same request
// gets back the machine the first one launched; a different request for the
// same name (the next create attempt carries a new instance token in its
// user data, or another instance type) gets a token of its own, because EC2
// answers a reused token with different parameters with
// IdempotentParameterMismatch, and a reused token whose machine was
// terminated with that dead machine — for at least 24 hours.
func clientToken(in *awsec2.RunInstancesInput) string {
	unsigned := *in
	unsigned.ClientToken = nil
	// The request types are plain data; encoding them cannot fail.
	data, _ := json.Marshal(&unsigned)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) // 64 characters, EC2's maximum
}

// rotate returns subnets starting at a position picked by name.
func rotate(subnets []string, name string) []string {
	if len(subnets) < 2 {
		return subnets
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	start := int(h.Sum32() % uint32(len(subnets)))
	return append(append([]string{}, subnets[start:]...), subnets[:start]...)
}

func choiceName(spot bool, instanceType, subnet string) string {
	market := marketOnDemand
	if spot {
		market = marketSpot
	}
	if instanceType == "" {
		instanceType = "(template's type)"
	}
	if subnet == "" {
		subnet = "(default subnet)"
	}
	return fmt.Sprintf("%s %s in %s", market, instanceType, subnet)
}

// rootDevice is the root device name of the image the pool launches, which
// a root volume size must be attached to (it differs between AMIs:
// /dev/xvda, /dev/sda1 …). It is looked up only when root_volume_size is
// set.
func (p *Provider) rootDevice(ctx context.Context, s Settings) (string, error) {
	if s.RootVolumeSize == 0 {
		return "", nil
	}
	image := s.ImageID
	if image == "" {
		var err error
		if image, err = p.templateImage(ctx); err != nil {
			return "", err
		}
	}
	if name, ok := p.rootDevices.Load(image); ok {
		return name.(string), nil
	}
	out, err := p.client.DescribeImages(ctx, &awsec2.DescribeImagesInput{ImageIds: []string{image}})
	if err != nil {
		return "", fmt.Errorf("%s: %w", fault("DescribeImages", err), err)
	}
	if len(out.Images) == 0 || aws.ToString(out.Images[0].RootDeviceName) == "" {
		return "", fmt.Errorf("image %s has no root device to size (root_volume_size)", image)
	}
	name := aws.ToString(out.Images[0].RootDeviceName)
	p.rootDevices.Store(image, name)
	return name, nil
}

// templateImage is the AMI of the launch template version the pool uses.
func (p *Provider) templateImage(ctx context.Context) (string, error) {
	s := p.settings
	in := &awsec2.DescribeLaunchTemplateVersionsInput{ResolveAlias: aws.Bool(true)}
	if launchTemplateIDPattern.MatchString(s.LaunchTemplate) {
		in.LaunchTemplateId = aws.String(s.LaunchTemplate)
	} else {
		in.LaunchTemplateName = aws.String(s.LaunchTemplate)
	}
	version := s.LaunchTemplateVersion
	if version == "" {
		version = "$Default"
	}
	in.Versions = []string{version}
	out, err := p.client.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fault("DescribeLaunchTemplateVersions", err), err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil ||
		aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.ImageId) == "" {
		return "", fmt.Errorf("launch template %s version %s names no image; root_volume_size needs one (or set image_id)", s.LaunchTemplate, version)
	}
	return aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.ImageId), nil
}
