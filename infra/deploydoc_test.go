package infra

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/providers/kubernetes"
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

// firstDeployParameters are the parameters docs/deploy.md's ordered path
// must name for a deploy that serves a job on a machine of your cloud.
var firstDeployParameters = map[string]string{
	"ConfigParameterName": "the config the functions read",
	"ControllerId":        "every function refuses to start when it differs from the config's controller_id",
	"GitHubSecretArn":     "the App's private key",
	"WebhookSecretArn":    "GitHub's webhook secret, which the App signs with",
	"ProviderPolicyArn":   "without it nothing allows ec2:RunInstances",
	"ProviderLayerArn":    "external providers' binaries",
	"KmsKeyArn":           "secrets encrypted with a key of your own",
}

// TestDeployDocFirstDeployPath holds docs/deploy.md's ordered path to a
// first served job, its config example, and the function and role counts
// of deploy.md and the README against template.yaml and the provider
// types the Lambda build has: a parameter renamed, a function added or a
// provider type added fails here until the docs follow.
func TestDeployDocFirstDeployPath(t *testing.T) {
	tpl := loadTemplate(t)
	params := tpl.get("Parameters").mapping()
	deploy := readRepoFile(t, "docs/deploy.md")
	path := markdownSection(t, deploy, "## From no App to the first job served")

	for _, m := range regexp.MustCompile(`\b([A-Z][A-Za-z]+)=`).FindAllStringSubmatch(path, -1) {
		if _, ok := params[m[1]]; !ok {
			t.Errorf("the ordered path sets %s, which is not a parameter of template.yaml", m[1])
		}
	}
	for name, why := range firstDeployParameters {
		if _, ok := params[name]; !ok {
			t.Errorf("%s (%s) is not a parameter of template.yaml any more", name, why)
		}
		if !strings.Contains(path, "`"+name+"`") && !strings.Contains(path, name+"=") {
			t.Errorf("the ordered path never names %s: %s", name, why)
		}
	}

	// The config example names every provider type the Lambda build has.
	config := markdownSection(t, deploy, "## Config")
	typeLine := regexp.MustCompile(`(?m)^\s*type: .*$`).FindString(config)
	for _, typ := range wiring.ProviderTypes() {
		if typ == kubernetes.Type {
			continue // left out of the Lambda build (-tags lambda.norpc): internal/wiring/kubernetes.go
		}
		if !strings.Contains(typeLine, typ) {
			t.Errorf("the Config example's %q does not name the provider type %s", strings.TrimSpace(typeLine), typ)
		}
	}

	fns := tpl.resourcesOfType("AWS::Serverless::Function")
	roles := tpl.resourcesOfType("AWS::IAM::Role")
	readme := readRepoFile(t, "README.md")
	for _, c := range []struct {
		file, text, pattern string
		want                int
	}{
		{"docs/deploy.md", deploy, `(\w+) functions, one package each`, len(fns)},
		{"docs/deploy.md", deploy, `creates (\w+) roles`, len(roles)},
		{"README.md", readme, `(\w+) arm64 Lambda functions`, len(fns)},
	} {
		m := regexp.MustCompile(c.pattern).FindStringSubmatch(c.text)
		if m == nil {
			t.Errorf("%s no longer says %q", c.file, c.pattern)
			continue
		}
		if got := numberWords[strings.ToLower(m[1])]; got != c.want {
			t.Errorf("%s says %q; template.yaml has %d", c.file, m[0], c.want)
		}
	}

	// The function names the Stack Name step lists, and the README's list.
	var names []string
	for _, fn := range fns {
		names = append(names, strings.TrimPrefix(fn.get("Properties").get("FunctionName").sub(), "${AWS::StackName}-"))
	}
	slices.Sort(names)
	var listed []string
	for _, m := range regexp.MustCompile("`<stack>-([a-z]+)`").FindAllStringSubmatch(deploy, -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		t.Errorf("docs/deploy.md names the functions %v, template.yaml has %v", listed, names)
	}
	sentence := regexp.MustCompile(`(?s)\w+ arm64 Lambda functions — .*? — `).FindString(readme)
	for _, name := range names {
		if !strings.Contains(sentence, "`"+name+"`") {
			t.Errorf("README.md's list of functions lacks %s: %q", name, sentence)
		}
	}
}

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// markdownSection is the text under heading up to the next heading of the
// same or a higher level.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	lines := strings.Split(doc[start+len(heading)+2:], "\n")
	level := strings.Index(heading, " ")
	inCode := false // a "# comment" in a code block is no heading
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		if h, _, ok := strings.Cut(line, " "); ok && !inCode && h != "" && strings.Trim(h, "#") == "" && len(h) <= level {
			return strings.Join(lines[:i], "\n")
		}
	}
	return strings.Join(lines, "\n")
}

// TestDeployDocReadsTheControllerID runs the ordered path's line that reads
// controller_id from runfleet.yaml on the ways YAML writes the value: a
// quoted one used to come out empty, and ControllerId with it.
func TestDeployDocReadsTheControllerID(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh: the doc's sed line cannot be run")
	}
	path := markdownSection(t, readRepoFile(t, "docs/deploy.md"), "## From no App to the first job served")
	line := regexp.MustCompile(`(?m)^\s*(controller_id="\$\(sed .*runfleet\.yaml\)")$`).FindStringSubmatch(path)
	if line == nil {
		t.Fatal("the ordered path no longer reads controller_id with sed from runfleet.yaml")
	}
	for _, written := range []string{`controller_id: acme-prod`, `controller_id: "acme-prod"`, `controller_id: 'acme-prod'  # ours`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "runfleet.yaml"), []byte("# runfleet\n"+written+"\npools: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, "-c", line[1]+` && printf %s "$controller_id"`)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil || string(out) != "acme-prod" {
			t.Errorf("%s: the deploy.md line read %q (%v), want acme-prod", written, out, err)
		}
	}
}
