package kubernetes

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The settings table in docs/providers-kubernetes.md lists exactly the
// keys ParseSettings reads, and the Role in deploy/kubernetes grants the
// resources the provider calls (no more: the manifests test checks the
// refusals against the API server).
func TestDocsListEverySetting(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers-kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "## Settings")
	end := strings.Index(section[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/providers-kubernetes.md has no \"## Settings\" section")
	}
	section = section[start : start+1+end]
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	want := slices.Clone(settingKeys)
	slices.Sort(want)
	slices.Sort(documented)
	if !slices.Equal(documented, want) {
		t.Errorf("documented settings %v; ParseSettings reads %v", documented, want)
	}
}

func TestRoleNamesTheResourcesTheProviderCalls(t *testing.T) {
	role, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"resources: [pods]", "resources: [secrets]", "resources: [podtemplates]"} {
		if !strings.Contains(string(role), r) {
			t.Errorf("role.yaml has no rule for %s", r)
		}
	}
}
