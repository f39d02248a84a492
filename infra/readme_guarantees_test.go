package infra

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test README.md's guarantees table names exists: a guarantee whose
// test was renamed or removed would otherwise point at nothing. Names
// written with "…" stand for a family (TestP2…): at least one test must
// start with the prefix.
func TestReadmeGuaranteesNameExistingTests(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## What runfleet guarantees")
	if !ok {
		t.Fatal("README.md has no \"What runfleet guarantees\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := regexp.MustCompile("`(Test[A-Za-z0-9_]*)(…)?`").FindAllStringSubmatch(section, -1)
	if len(named) < 20 {
		t.Fatalf("found %d test names in the guarantees section; the pattern no longer reads it", len(named))
	}

	defined := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".cache" || d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcs.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		name, family := m[1], m[2] != ""
		if !family && !defined[name] {
			t.Errorf("README.md's guarantees name %s, which no test defines", name)
		}
		if family && !hasPrefix(defined, name) {
			t.Errorf("README.md's guarantees name %s…, but no test starts with %s", name, name)
		}
	}
}

func hasPrefix(set map[string]bool, prefix string) bool {
	for name := range set {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
