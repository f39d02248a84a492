package infra

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/deploy.md promises one table of every function's environment and
// one of the stack's outputs. Both are written by hand, so these tests
// keep them equal to template.yaml.

// TestDeployDocEnvironmentTable compares the table under "### Environment
// variables" with each function's Environment.Variables (Globals included).
// Its header names the functions by logical id; a ✓ means the template sets
// the variable for that function.
func TestDeployDocEnvironmentTable(t *testing.T) {
	tpl := loadTemplate(t)
	header, rows := deployDocTable(t, "### Environment variables", "| variable |")
	fns := tpl.resourcesOfType("AWS::Serverless::Function")
	columns := header[1 : len(header)-1]
	if got, want := slices.Sorted(slices.Values(columns)), sortedKeys(fns); !slices.Equal(got, want) {
		t.Fatalf("the table's function columns are %v, want the template's functions %v", got, want)
	}

	documented := map[string]map[string]bool{}
	for _, row := range rows {
		name := strings.Trim(row[0], "`")
		for i, fn := range columns {
			switch cell := row[i+1]; cell {
			case "✓":
				if documented[fn] == nil {
					documented[fn] = map[string]bool{}
				}
				documented[fn][name] = true
			case "":
			default:
				t.Errorf("row %s, column %s: %q, want ✓ or nothing", name, fn, cell)
			}
		}
	}

	globals := tpl.get("Globals").get("Function").get("Environment").get("Variables").mapping()
	for _, fn := range columns {
		set := map[string]bool{}
		for name := range globals {
			set[name] = true
		}
		for name := range tpl.resource(fn).get("Properties").get("Environment").get("Variables").mapping() {
			set[name] = true
		}
		if got, want := slices.Sorted(maps.Keys(documented[fn])), slices.Sorted(maps.Keys(set)); !slices.Equal(got, want) {
			t.Errorf("%s: docs/deploy.md lists %v, template.yaml sets %v", fn, got, want)
		}
	}
}

// TestDeployDocOutputs compares the outputs table after "sam deploy
// --guided" with template.yaml's Outputs.
func TestDeployDocOutputs(t *testing.T) {
	tpl := loadTemplate(t)
	_, rows := deployDocTable(t, "When it finishes, the stack's outputs are:", "| output |")
	code := regexp.MustCompile("`([A-Za-z]+)`")
	var documented []string
	for _, row := range rows {
		for _, m := range code.FindAllStringSubmatch(row[0], -1) {
			documented = append(documented, m[1])
		}
	}
	slices.Sort(documented)
	if want := sortedKeys(tpl.get("Outputs").mapping()); !slices.Equal(documented, want) {
		t.Errorf("docs/deploy.md lists the outputs %v, template.yaml has %v", documented, want)
	}
}

// deployDocTable returns the header cells and body rows of the first
// Markdown table in docs/deploy.md after the line anchor whose header row
// starts with headerPrefix.
func deployDocTable(t *testing.T, anchor, headerPrefix string) (header []string, rows [][]string) {
	t.Helper()
	data, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := slices.Index(lines, anchor)
	if start < 0 {
		t.Fatalf("docs/deploy.md has no line %q", anchor)
	}
	i := start + 1
	for i < len(lines) && !strings.HasPrefix(lines[i], headerPrefix) {
		i++
	}
	if i+1 >= len(lines) {
		t.Fatalf("docs/deploy.md: no table starting %q after %q", headerPrefix, anchor)
	}
	header = tableCells(lines[i])
	for _, line := range lines[i+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := tableCells(line)
		if len(cells) != len(header) {
			t.Fatalf("docs/deploy.md table row %q has %d cells, want %d", line, len(cells), len(header))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("docs/deploy.md: the table after %q is empty", anchor)
	}
	return header, rows
}

// tableCells splits one Markdown table row. No cell of the tables read
// here holds an escaped pipe.
func tableCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}
