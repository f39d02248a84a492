package config_test

import (
	"testing"
)

// A scale_set is checked like every other key, and refused as a whole
// until this build serves scale-set pools: a pool webhooks skip and no
// listener feeds would get no job at all.
func TestScaleSetPoolsAreCheckedAndNotYetServed(t *testing.T) {
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
	notServed := "pools[0].scale_set: scale-set pools are not served by this build yet: the listener is built but not started by serve or the AWS stack (issue #20); feed the pool by webhooks"
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"not served", with("      name: linux-scale\n"), []string{notServed}},
		{"name missing", with("      name: \"\"\n"), []string{"pools[0].scale_set.name: required with scale_set", notServed}},
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
	if _, err := parse(t, validYAML, defaultEnv()); err != nil {
		t.Fatalf("a config without scale_set: %v", err)
	}
}
