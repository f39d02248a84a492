package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// withShapes adds a shapes block to the first pool of validYAML.
func withShapes(t *testing.T, block string) string {
	t.Helper()
	return replace(t, "    max_runners: 3\n", "    max_runners: 3\n    shapes:\n"+block)
}

func TestShapesReachTheDomainPolicy(t *testing.T) {
	yaml := withShapes(t, `      families: [c7g, m7g]
      max_cpu: 16
      max_memory: 64
      max_disk: 200
      spot: true
      images:
        ubuntu: ami-0123456789abcdef0
        al2023: resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64
`)
	cfg, err := parse(t, yaml, defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	got := policy.Pools(cfg)[0].Shapes
	want := &runner.ShapePolicy{
		Families: []string{"c7g", "m7g"}, MaxCPU: 16, MaxMemoryGiB: 64, MaxDiskGiB: 200, Spot: true,
		Images: map[string]string{
			"ubuntu": "ami-0123456789abcdef0",
			"al2023": "resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policy = %+v, want %+v", got, want)
	}
}

func TestPoolWithoutShapesHasNoPolicy(t *testing.T) {
	cfg, err := parse(t, validYAML, defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if p := policy.Pools(cfg)[0]; p.Shapes != nil {
		t.Errorf("a pool without shapes: policy %+v, want nil (every shape refused)", p.Shapes)
	}
}

func TestShapesValidation(t *testing.T) {
	cases := []struct {
		name  string
		block string
		want  []string
	}{
		{"unknown key", "      families: [m7g]\n      max_cpu: 4\n      max_memory: 16\n      max_gpu: 1\n",
			[]string{`pools[0].shapes.max_gpu: line 16: unknown field; did you mean "max_cpu"?`}},
		{"limits required", "      spot: true\n",
			[]string{
				"pools[0].shapes.families: required: the instance families jobs may ask for, cheapest first (e.g. [c7g, m7g])",
				"pools[0].shapes.max_cpu: must be from 1 to 1024 (vCPUs)",
				"pools[0].shapes.max_memory: must be from 1 to 32768 (GiB)",
			}},
		{"bad values", "      families: [M7G, m7g, m7g]\n      max_cpu: 2000\n      max_memory: 16\n      max_disk: -1\n",
			[]string{
				`pools[0].shapes.families[0]: "M7G": must be a lower-case instance family such as m7g`,
				`pools[0].shapes.families[2]: "m7g" is listed twice`,
				"pools[0].shapes.max_cpu: must be from 1 to 1024 (vCPUs)",
				"pools[0].shapes.max_disk: must be from 0 to 16384 (GiB; 0 = jobs may not ask for a disk size)",
			}},
		{"bad images", "      families: [m7g]\n      max_cpu: 4\n      max_memory: 16\n      images:\n        Ubuntu: ami-0123\n        win: windows-2022\n",
			[]string{
				`pools[0].shapes.images.Ubuntu: "Ubuntu": an alias must be 1–64 lower-case letters, digits, '.', '_' or '-'`,
				`pools[0].shapes.images.win: "windows-2022": must be an AMI id (ami-…) or "resolve:ssm:<parameter>"`,
			}},
		{"wrong type", "      families: m7g\n      max_cpu: four\n      max_memory: 16\n",
			[]string{`pools[0].shapes.families: line 13: must be a list, such as [a, b], not "m7g"`, `pools[0].shapes.max_cpu: line 14: must be a whole number, not "four"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, withShapes(t, c.block), defaultEnv())
			if err == nil {
				t.Fatal("parsed; want errors")
			}
			assertMessages(t, err, c.want...)
		})
	}
}

func TestShapesNeedAProviderThatLaunchesByShape(t *testing.T) {
	yaml := withShapes(t, "      families: [m7g]\n      max_cpu: 4\n      max_memory: 16\n")
	yaml = strings.Replace(yaml, "type: simulated", "type: external", 1)
	_, err := parse(t, yaml, defaultEnv())
	assertMessages(t, err, "pools[0].shapes: the external provider cannot launch machines by shape (only ec2, simulated, kubernetes)")
}

func TestPoolLabelsCannotBeShapeLabels(t *testing.T) {
	_, err := parse(t, replace(t, "labels: [self-hosted, linux, x64]", "labels: [linux, runfleet/cpu=4]"), defaultEnv())
	assertMessages(t, err, `pools[0].labels[1]: "runfleet/cpu=4": labels starting with "runfleet/" ask for machine shapes; a pool grants them with shapes:, it cannot carry them`)
}

func TestKubernetesShapesNeedNoFamilies(t *testing.T) {
	yaml := withShapes(t, "      max_cpu: 4\n      max_memory: 16\n")
	yaml = strings.Replace(yaml, "type: simulated", "type: kubernetes", 1)
	if _, err := parse(t, yaml, defaultEnv()); err != nil {
		t.Fatalf("a kubernetes pool's shapes without families (resource requests have none): %v", err)
	}
}
