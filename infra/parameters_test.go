package infra

import (
	"fmt"
	"strings"
	"testing"
)

// Every parameter is in exactly one group of the console's form, and in
// docs/deploy.md's Parameters table with the template's default.
func TestParametersAreGroupedAndDocumented(t *testing.T) {
	tpl := loadTemplate(t)
	params := tpl.get("Parameters").mapping()
	grouped := map[string]int{}
	for _, g := range tpl.get("Metadata").get("AWS::CloudFormation::Interface").get("ParameterGroups").list() {
		for _, name := range (value{g}).get("Parameters").strs() {
			grouped[name]++
			if _, ok := params[name]; !ok {
				t.Errorf("ParameterGroups name %s, which is not a parameter", name)
			}
		}
	}
	_, rows := deployDocTable(t, "## Parameters", "| parameter |")
	documented := map[string]string{}
	for _, row := range rows {
		documented[strings.Trim(row[0], "`")] = row[1]
	}
	for _, name := range sortedKeys(params) {
		if grouped[name] != 1 {
			t.Errorf("parameter %s is in %d ParameterGroups, want 1", name, grouped[name])
		}
		cell, ok := documented[name]
		if !ok {
			t.Errorf("parameter %s is not in docs/deploy.md's Parameters table", name)
			continue
		}
		def := fmt.Sprint(value{params[name]}.get("Default").v)
		switch {
		case cell == "empty":
			if def != "" {
				t.Errorf("docs/deploy.md says %s defaults to empty; template.yaml says %q", name, def)
			}
		case strings.HasPrefix(cell, "`"):
			if got := strings.Trim(cell, "`"); got != def {
				t.Errorf("docs/deploy.md says %s defaults to %q; template.yaml says %q", name, got, def)
			}
		}
	}
	for name := range documented {
		if _, ok := params[name]; !ok {
			t.Errorf("docs/deploy.md documents the parameter %s, which template.yaml does not have", name)
		}
	}
}
