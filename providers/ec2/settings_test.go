package ec2_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/runfleet/runfleet/providers/ec2"
)

func TestParseSettingsReadsEveryKey(t *testing.T) {
	got, err := ec2.ParseSettings(map[string]any{
		"region":                  "eu-west-1",
		"launch_template":         "runners-x64",
		"launch_template_version": "$Latest",
		"image_id":                "ami-0abc1234",
		"instance_types":          []any{"c7i.large", "m7i.large"},
		"subnet_ids":              []any{"subnet-0a", "subnet-0b"},
		"security_group_ids":      []any{"sg-0123"},
		"iam_instance_profile":    "runfleet-runner",
		"spot":                    true,
		"root_volume_size":        60,
		"tags":                    map[string]any{"team": "ci", "cost-center": 1234},
		"user_data_template":      "#!/bin/sh\necho {{shellquote .MetadataURL}}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Region != "eu-west-1" || got.LaunchTemplate != "runners-x64" || got.LaunchTemplateVersion != "$Latest" ||
		got.ImageID != "ami-0abc1234" || strings.Join(got.InstanceTypes, ",") != "c7i.large,m7i.large" ||
		strings.Join(got.SubnetIDs, ",") != "subnet-0a,subnet-0b" || strings.Join(got.SecurityGroupIDs, ",") != "sg-0123" ||
		got.IAMInstanceProfile != "runfleet-runner" || !got.Spot || got.RootVolumeSize != 60 ||
		got.Tags["team"] != "ci" || got.Tags["cost-center"] != "1234" || !strings.Contains(got.UserDataTemplate, "MetadataURL") {
		t.Fatalf("ParseSettings = %+v", got)
	}
}

func TestParseSettingsAcceptsTheMinimalForms(t *testing.T) {
	for name, settings := range map[string]map[string]any{
		"image and type":          {"image_id": "ami-0abc", "instance_types": []any{"t3.large"}},
		"ssm image":               {"image_id": "resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", "instance_types": []any{"t3.large"}},
		"template by id":          {"launch_template": "lt-0123abcd"},
		"template by name":        {"launch_template": "my-runners", "launch_template_version": "7"},
		"instance profile by ARN": {"launch_template": "lt-0123abcd", "iam_instance_profile": "arn:aws:iam::123456789012:instance-profile/runners"},
	} {
		if _, err := ec2.ParseSettings(settings); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseSettingsNamesTheKeyOfEveryProblem(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"image_id": "ami-0abc", "instance_types": []any{"t3.large"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		settings map[string]any
		want     string
	}{
		{base(map[string]any{"instance_type": "t3.large"}), "unknown setting instance_type"},
		{map[string]any{"instance_types": []any{"t3.large"}}, "image_id: set image_id or launch_template"},
		{map[string]any{"image_id": "ami-0abc"}, "instance_types: at least one"},
		{base(map[string]any{"region": "Europe"}), "region: want an AWS region"},
		{base(map[string]any{"image_id": "ubuntu"}), "image_id: want an AMI id"},
		{base(map[string]any{"launch_template": "x"}), "launch_template: want a launch template id"},
		{base(map[string]any{"launch_template_version": "latest"}), "launch_template_version: want"},
		{base(map[string]any{"launch_template_version": "$Latest"}), "launch_template_version: set only with launch_template"},
		{base(map[string]any{"instance_types": "t3.large"}), "instance_types: want a list"},
		{base(map[string]any{"instance_types": []any{"t3.large", "t3.large"}}), `instance_types[1]: "t3.large" is listed twice`},
		{base(map[string]any{"instance_types": []any{"large"}}), "instance_types[0]: want instance types"},
		{base(map[string]any{"subnet_ids": []any{"subnet-0a", "vpc-1"}}), "subnet_ids[1]: want subnet ids"},
		{base(map[string]any{"security_group_ids": []any{"default"}}), "security_group_ids[0]: want security group ids"},
		{base(map[string]any{"iam_instance_profile": "arn:aws:iam::1:role/x"}), "iam_instance_profile: want an instance profile"},
		{base(map[string]any{"spot": "yes"}), "spot: want true or false"},
		{base(map[string]any{"root_volume_size": 0}), "root_volume_size: want a size in GiB"},
		{base(map[string]any{"root_volume_size": 8.5}), "root_volume_size: want a size in GiB"},
		{base(map[string]any{"image_id": "resolve:ssm:/x", "root_volume_size": 30}), "root_volume_size: needs image_id to be an AMI id"},
		{base(map[string]any{"tags": []any{"a"}}), "tags: want a map"},
		{base(map[string]any{"tags": map[string]any{"Name": "x"}}), "tags.Name: runfleet sets Name"},
		{base(map[string]any{"tags": map[string]any{"runfleet:pool": "x"}}), "tags.runfleet:pool: runfleet sets"},
		{base(map[string]any{"tags": map[string]any{"aws:foo": "x"}}), "tags.aws:foo: the aws: prefix is reserved"},
		{base(map[string]any{"tags": map[string]any{"team": 1.5}}), "tags.team: want a string value"},
		{base(map[string]any{"user_data_template": "{{.Secret}}"}), "user_data_template:"},
		{base(map[string]any{"user_data_template": "{{if}}"}), "user_data_template:"},
	} {
		_, err := ec2.ParseSettings(tc.settings)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSettings(%v) = %v, want an error containing %q", tc.settings, err, tc.want)
		}
	}
}

func TestNewWithConfigNeedsOwnershipAndARegion(t *testing.T) {
	s := ec2.Settings{ImageID: "ami-0abc", InstanceTypes: []string{"t3.large"}}
	owner := ec2.Ownership{ControllerID: "ctl", PoolID: "7d1f6a4e-0c2b-8a31-9d55-2f0e4b6c8a10"}
	if _, err := ec2.NewWithConfig(awsConfigWithRegion(""), ec2.Ownership{PoolID: owner.PoolID}, s); err == nil || !strings.Contains(err.Error(), "controller id") {
		t.Errorf("no controller id: %v", err)
	}
	if _, err := ec2.NewWithConfig(awsConfigWithRegion("us-east-1"), ec2.Ownership{ControllerID: "ctl"}, s); err == nil || !strings.Contains(err.Error(), "provider-side id") {
		t.Errorf("no pool id: %v", err)
	}
	if _, err := ec2.NewWithConfig(awsConfigWithRegion(""), owner, s); err == nil || !strings.Contains(err.Error(), "region: not set") {
		t.Errorf("no region: %v", err)
	}
	s.Region = "eu-west-1"
	if _, err := ec2.NewWithConfig(awsConfigWithRegion(""), owner, s); err != nil {
		t.Errorf("region from settings: %v", err)
	}
	if _, err := ec2.NewWithConfig(awsConfigWithRegion("us-east-1"), owner, ec2.Settings{}); err == nil || !strings.Contains(err.Error(), "image_id") {
		t.Errorf("settings are validated: %v", err)
	}
}

func awsConfigWithRegion(region string) aws.Config { return aws.Config{Region: region} }
