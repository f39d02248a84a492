package ec2_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers/ec2"
)

func TestLaunchTemplateWithRootVolumeSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	name := testenv.UniqueName(t, "lt")
	tmpl, err := w.ec2.CreateLaunchTemplate(ctx, &awsec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:      aws.String(w.image),
			InstanceType: ec2types.InstanceTypeM5Large,
		},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	images, err := w.ec2.DescribeImages(ctx, &awsec2.DescribeImagesInput{ImageIds: []string{w.image}})
	if err != nil || len(images.Images) != 1 {
		t.Fatalf("DescribeImages: %v", err)
	}
	rootDevice := aws.ToString(images.Images[0].RootDeviceName)

	for _, ref := range []string{name, aws.ToString(tmpl.LaunchTemplate.LaunchTemplateId)} {
		p := w.provider("template", ec2.Settings{LaunchTemplate: ref, RootVolumeSize: 40})
		req := w.request("template")
		inst, err := p.CreateInstance(ctx, req)
		if err != nil {
			t.Fatalf("CreateInstance from template %s: %v", ref, err)
		}
		live := w.live(req.Name)
		if len(live) != 1 || live[0].InstanceType != ec2types.InstanceTypeM5Large {
			t.Fatalf("template %s: want one m5.large (the template's type), got %v", ref, ids(live))
		}
		var rootVolume string
		for _, m := range live[0].BlockDeviceMappings {
			if aws.ToString(m.DeviceName) == rootDevice && m.Ebs != nil {
				rootVolume = aws.ToString(m.Ebs.VolumeId)
			}
		}
		if rootVolume == "" {
			t.Fatalf("template %s: %s has no volume on the image's root device %s: %+v", ref, inst.ProviderID, rootDevice, live[0].BlockDeviceMappings)
		}
		vols, err := w.ec2.DescribeVolumes(ctx, &awsec2.DescribeVolumesInput{VolumeIds: []string{rootVolume}})
		if err != nil || len(vols.Volumes) != 1 {
			t.Fatalf("DescribeVolumes: %v", err)
		}
		if size := aws.ToInt32(vols.Volumes[0].Size); size != 40 {
			t.Errorf("template %s: root volume is %d GiB, want 40", ref, size)
		}
	}
}
