package config_test

import (
	"testing"
)

// A scale_set is checked like every other key.
func TestScaleSetPoolsAreChecked(t *testing.T) {
	second := `  - name: second
    owner: octo-org
    labels: [linux]
    max_runners: 1
    scale_set:
      name: linux-scale
    provider:
      type: simulated
`
	with := func(scaleSet string) string {
		return replace(t, "    max_runners: 3\n", "    max_runners: 3\n    scale_set:\n"+scaleSet)
	}
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"name missing", with("      name: \"\"\n"), []string{"pools[0].scale_set.name: required with scale_set"}},
		{"name with a space", with("      name: \"linux scale\"\n"), []string{`pools[0].scale_set.name: "linux scale": must not contain whitespace or commas (it is a runner label)`}},
		{"one pool per scale set", with("      name: linux-scale\n") + second,
			[]string{`pools[1].scale_set.name: "linux-scale" is already the scale set of pools[0]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.yaml, defaultEnv())
			assertMessages(t, err, tc.want...)
		})
	}
	cfg, err := parse(t, with("      name: linux-scale\n"), defaultEnv())
	if err != nil {
		t.Fatalf("a scale-set pool: %v", err)
	}
	if s := cfg.Pools[0].ScaleSet; s == nil || s.Name != "linux-scale" {
		t.Fatalf("scale_set read as %+v", s)
	}
}
