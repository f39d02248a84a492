package runner

import (
	"strings"
	"testing"
)

func TestMismatchSaysWhichLabelsAndTheNearestPool(t *testing.T) {
	pools := Pools{
		{Name: "linux", Owner: Owner{Org: "octo"}, Labels: []string{"linux", "x64"}},
		{Name: "arm", Owner: Owner{Org: "octo"}, Labels: []string{"linux", "arm64"}},
		{Name: "other", Owner: Owner{Org: "elsewhere"}, Labels: []string{"gpu"}},
	}
	tests := []struct {
		name        string
		org, repo   string
		labels      []string
		recorded    bool
		reason      string
		detailFacts []string
	}{
		{"typo in a label", "octo", "octo/app", []string{"self-hosted", "linux", "x46"}, true, UnmatchedLabels,
			[]string{"no pool has x46", "nearest pool, linux, lacks x46"}},
		{"labels split across pools", "octo", "octo/app", []string{"linux", "x64", "arm64"}, true, UnmatchedLabels,
			[]string{"never all in one", "lacks arm64"}},
		{"label only another owner's pool has", "octo", "octo/app", []string{"self-hosted", "gpu"}, true, UnmatchedLabels,
			[]string{"no pool has gpu", "lacks gpu"}},
		{"no pool for the owner", "nobody", "nobody/app", []string{"self-hosted", "linux"}, true, UnmatchedOwner,
			[]string{"no pool serves repository nobody/app"}},
		{"GitHub-hosted job is not runfleet's", "octo", "octo/app", []string{"ubuntu-latest"}, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := pools.Match(tt.repo, tt.org, "", tt.labels); ok {
				t.Fatal("fixture matches a pool")
			}
			m, recorded := pools.Mismatch(tt.repo, tt.org, "", tt.labels)
			if recorded != tt.recorded || m.Reason != tt.reason {
				t.Fatalf("Mismatch = %+v, %v; want reason %q, recorded %v", m, recorded, tt.reason, tt.recorded)
			}
			for _, fact := range tt.detailFacts {
				if !strings.Contains(m.Detail, fact) {
					t.Errorf("detail %q does not say %q", m.Detail, fact)
				}
			}
		})
	}
}

// The webhook about a scale set's job is not recorded as unmatched: the
// listener holds the job. A scale-set pool is never a webhook job's
// nearest pool either.
func TestMismatchLeavesScaleSetJobsToTheirListener(t *testing.T) {
	ps := Pools{
		{Name: "scale", Owner: Owner{Org: "o"}, Labels: []string{"linux"}, ScaleSet: "linux-scale"},
		{Name: "gpu", Owner: Owner{Org: "o"}, Labels: []string{"gpu"}},
	}
	if m, meant := ps.Mismatch("o/r", "o", "", []string{"Linux-Scale"}); meant {
		t.Fatalf("a scale set's job recorded as unmatched: %+v", m)
	}
	m, meant := ps.Mismatch("o/r", "o", "", []string{"self-hosted", "linux"})
	if !meant || m.Reason != UnmatchedLabels || !strings.Contains(m.Detail, "nearest pool, gpu") {
		t.Fatalf("a webhook job near only a scale-set pool's labels: %+v, %v", m, meant)
	}
}
