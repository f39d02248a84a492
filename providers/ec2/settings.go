package ec2

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/runfleet/runfleet/providers/settings"
)

// Type is the provider type name in config (pools[].provider.type).
const Type = "ec2"

// Settings configure the EC2 provider of one pool
// (pools[].provider.settings).
type Settings struct {
	// Region is the AWS region; empty = the environment's (AWS_REGION).
	Region string
	// LaunchTemplate is a launch template id (lt-…) or name, and
	// LaunchTemplateVersion its version ("$Latest", "$Default" or a number;
	// empty = the template's default version).
	LaunchTemplate        string
	LaunchTemplateVersion string
	// ImageID is an AMI id (ami-…) or "resolve:ssm:<parameter>"; with a
	// launch template it overrides the template's image.
	ImageID string
	// InstanceTypes are tried in order when EC2 has no capacity for one.
	// Required without a launch template.
	InstanceTypes []string
	// SubnetIDs are tried in order on capacity errors, starting at a
	// position derived from the instance name so machines spread over them.
	SubnetIDs        []string
	SecurityGroupIDs []string
	// IAMInstanceProfile is an instance profile name or ARN.
	IAMInstanceProfile string
	// Spot launches spot instances, falling back to on-demand when no spot
	// choice has capacity.
	Spot bool
	// RootVolumeSize is the root volume's size in GiB (0 = the image's).
	RootVolumeSize int32
	// Tags are extra tags for the instance and its volumes.
	Tags map[string]string
	// UserDataTemplate replaces the default user data (a text/template; see
	// UserData for its fields).
	UserDataTemplate string
	// WarmPool keeps stopped machines with the runner installed, which a
	// create starts instead of launching one (warm_claim.go).
	WarmPool WarmPoolSettings
}

// Setting keys, in the order errors list them.
const (
	keyRegion                = "region"
	keyLaunchTemplate        = "launch_template"
	keyLaunchTemplateVersion = "launch_template_version"
	keyImageID               = "image_id"
	keyInstanceTypes         = "instance_types"
	keySubnetIDs             = "subnet_ids"
	keySecurityGroupIDs      = "security_group_ids"
	keyIAMInstanceProfile    = "iam_instance_profile"
	keySpot                  = "spot"
	keyRootVolumeSize        = "root_volume_size"
	keyTags                  = "tags"
	keyUserDataTemplate      = "user_data_template"
)

var settingKeys = []string{
	keyRegion, keyLaunchTemplate, keyLaunchTemplateVersion, keyImageID,
	keyInstanceTypes, keySubnetIDs, keySecurityGroupIDs, keyIAMInstanceProfile,
	keySpot, keyRootVolumeSize, keyTags, keyUserDataTemplate, keyWarmPool,
}

// Limits EC2 sets: 50 tags per resource (runfleet sets up to 10 on one
// machine: controller, pool, pool id, instance, Name, and on a claimed warm
// machine its shape, request and claim, plus racing claimers' for a moment),
// 128/256 characters per tag key/value, 16 TiB per gp3 volume.
const (
	maxRunfleetTags   = 10
	maxExtraTags      = 50 - maxRunfleetTags
	maxTagKeyLength   = 128
	maxTagValueLength = 256
	maxRootVolumeGiB  = 16384
)

var (
	regionPattern           = regexp.MustCompile(`^[a-z]{2,4}(-[a-z]+)+-[0-9]+$`)
	launchTemplateIDPattern = regexp.MustCompile(`^lt-[0-9a-f]+$`)
	// Launch template names: 3–128 characters of letters, digits and ( ) . / _ -
	launchTemplateNamePattern    = regexp.MustCompile(`^[a-zA-Z0-9()./_-]{3,128}$`)
	launchTemplateVersionPattern = regexp.MustCompile(`^(\$Latest|\$Default|[1-9][0-9]*)$`)
	imageIDPattern               = regexp.MustCompile(`^(ami-[0-9a-f]+|resolve:ssm:\S+)$`)
	instanceTypePattern          = regexp.MustCompile(`^[a-z0-9-]+\.[a-z0-9-]+$`)
	subnetIDPattern              = regexp.MustCompile(`^subnet-[0-9a-f]+$`)
	securityGroupIDPattern       = regexp.MustCompile(`^sg-[0-9a-f]+$`)
	instanceProfileARNPattern    = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:instance-profile/\S+$`)
	instanceProfileNamePattern   = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
)

// ParseSettings reads and validates a pool's provider settings. A null
// value is as if the key were absent. Unknown keys are errors, every error
// names its key, and all of them are reported at once (errors.Join).
func ParseSettings(values map[string]any) (Settings, error) {
	r := settings.NewReader(values, settingKeys...)
	s := Settings{
		Region:                readPattern(r, keyRegion, regionPattern, "an AWS region such as us-east-1"),
		LaunchTemplate:        readLaunchTemplate(r, keyLaunchTemplate),
		LaunchTemplateVersion: readPattern(r, keyLaunchTemplateVersion, launchTemplateVersionPattern, `"$Latest", "$Default" or a version number`),
		ImageID:               readPattern(r, keyImageID, imageIDPattern, `an AMI id (ami-…) or "resolve:ssm:<parameter>"`),
		InstanceTypes:         readDistinct(r, keyInstanceTypes, instanceTypePattern, "instance types such as t3.large"),
		SubnetIDs:             readDistinct(r, keySubnetIDs, subnetIDPattern, "subnet ids (subnet-…)"),
		SecurityGroupIDs:      readDistinct(r, keySecurityGroupIDs, securityGroupIDPattern, "security group ids (sg-…)"),
		IAMInstanceProfile:    readInstanceProfile(r, keyIAMInstanceProfile),
		Spot:                  r.Bool(keySpot),
		RootVolumeSize:        readVolumeSize(r, keyRootVolumeSize),
		Tags:                  readTags(r, keyTags),
		UserDataTemplate:      r.String(keyUserDataTemplate),
		WarmPool:              readWarmPool(r, keyWarmPool),
	}
	if err := r.Err(); err != nil {
		return Settings{}, fmt.Errorf("ec2 provider: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// Validate checks what spans several settings, and the user data template.
// ParseSettings calls it; call it yourself for Settings built in code.
func (s Settings) Validate() error {
	switch {
	case s.LaunchTemplate == "" && s.ImageID == "":
		return settingError(keyImageID, "set image_id or launch_template: EC2 needs an image to launch")
	case s.LaunchTemplate == "" && len(s.InstanceTypes) == 0:
		return settingError(keyInstanceTypes, "at least one instance type is required without a launch_template")
	case s.LaunchTemplate == "" && s.LaunchTemplateVersion != "":
		return settingError(keyLaunchTemplateVersion, "set only with launch_template")
	case s.RootVolumeSize != 0 && strings.HasPrefix(s.ImageID, "resolve:ssm:"):
		return settingError(keyRootVolumeSize, "needs image_id to be an AMI id: the root device of a resolve:ssm image cannot be looked up")
	}
	if _, err := parseUserDataTemplate(s.UserDataTemplate); err != nil {
		return settingError(keyUserDataTemplate, "%v", err)
	}
	return nil
}

func settingError(key, format string, args ...any) error {
	return fmt.Errorf("ec2 provider: %s: %s", key, fmt.Sprintf(format, args...))
}
