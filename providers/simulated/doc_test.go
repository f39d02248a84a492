package simulated

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestSettingsDocumented holds docs/providers-simulated.md's settings table
// against the keys ParseSettings accepts: a setting added here and not
// there, or documented and gone, fails.
func TestSettingsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers-simulated.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")
	var documented []string
	for _, m := range row.FindAllSubmatch(doc, -1) {
		documented = append(documented, string(m[1]))
	}
	for _, k := range settingKeys {
		if !slices.Contains(documented, k) {
			t.Errorf("setting %s is not in docs/providers-simulated.md's table", k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(settingKeys, k) {
			t.Errorf("docs/providers-simulated.md documents %s, which ParseSettings does not accept", k)
		}
	}
}
