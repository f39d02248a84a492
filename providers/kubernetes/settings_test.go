package kubernetes

import (
	"strings"
	"testing"
)

func TestParseSettings(t *testing.T) {
	template := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"team": "ci"}},
		"spec": map[string]any{
			"serviceAccountName": "runner",
			"nodeSelector":       map[string]any{"kubernetes.io/arch": "amd64"},
			"containers":         []any{map[string]any{"name": "runner", "image": "ghcr.io/actions/actions-runner:2.330.0"}},
		},
	}
	cases := []struct {
		name    string
		in      map[string]any
		problem string // "" = valid
	}{
		{name: "image only", in: map[string]any{"image": "runner:1"}},
		{name: "inline template", in: map[string]any{"namespace": "ci", "template": template}},
		{name: "named PodTemplate", in: map[string]any{"pod_template": "runner"}},
		{name: "nothing to run", in: map[string]any{}, problem: "image: required"},
		{name: "both templates", in: map[string]any{"pod_template": "x", "template": template}, problem: "not both"},
		{name: "template without the runner container", in: map[string]any{"template": template, "container": "main"}, problem: `no container "main"`},
		{name: "template with a typo", in: map[string]any{"template": map[string]any{"spec": map[string]any{"contaners": []any{}}}}, problem: "not a pod template"},
		{name: "bad namespace", in: map[string]any{"image": "x", "namespace": "CI_Runners"}, problem: "namespace:"},
		{name: "unknown key", in: map[string]any{"image": "x", "node_selector": "y"}, problem: "node_selector"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSettings(c.in)
			if c.problem == "" {
				if err != nil {
					t.Fatalf("ParseSettings: %v", err)
				}
				if s.Container != DefaultContainer {
					t.Errorf("container = %q", s.Container)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.problem) {
				t.Errorf("ParseSettings error = %v; want one containing %q", err, c.problem)
			}
		})
	}
}
