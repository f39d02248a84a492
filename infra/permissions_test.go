package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// appPermission is one row of docs/github-app.md's permission table, the
// one list of the GitHub App's permissions.
type appPermission struct {
	name                string // as GitHub's settings page shows it: "Actions"
	manifestKey         string // in a manifest's default_permissions
	readWrite           bool   // "Read and write", else "Read"
	repositoryPoolsOnly bool
}

func (p appPermission) manifestAccess() string {
	if p.readWrite {
		return "write"
	}
	return "read"
}

// manifestKeys maps the names the table uses to GitHub's manifest keys.
var manifestKeys = map[string]string{
	"Self-hosted runners": "organization_self_hosted_runners",
	"Administration":      "administration",
	"Actions":             "actions",
	"Metadata":            "metadata",
}

var permissionRow = regexp.MustCompile(`^\| [A-Za-z]+ → \*\*([^*]+)\*\* \| ([^|]+) \|`)

func appPermissionTable(t *testing.T) []appPermission {
	t.Helper()
	data, err := os.ReadFile("../docs/github-app.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []appPermission
	for _, line := range strings.Split(string(data), "\n") {
		m := permissionRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, ok := manifestKeys[m[1]]
		if !ok {
			t.Errorf("docs/github-app.md's table names %q, which manifestKeys does not map to a manifest key", m[1])
			continue
		}
		access := strings.ToLower(m[2])
		rows = append(rows, appPermission{
			name: m[1], manifestKey: key,
			readWrite:           strings.HasPrefix(access, "read and write"),
			repositoryPoolsOnly: strings.Contains(access, "repository pools only"),
		})
	}
	return rows
}

// permissionMention is a page naming a permission's access: `"Actions"
// read`, `*Actions*: read and write`, `**Actions: Read and write**`.
var permissionMention = regexp.MustCompile(`(?i)\b(self-hosted runners|administration|actions|metadata)\b["*]*\s*:?\s*\**(read\s+(?:and|&)\s+write|read|write)\b`)

// Wherever the README or a doc says what access the App needs, it says
// what the table says. GitHub's "write" includes read.
func TestDocsAgreeWithThePermissionTable(t *testing.T) {
	table := map[string]bool{}
	for _, p := range appPermissionTable(t) {
		table[strings.ToLower(p.name)] = p.readWrite
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(docs, "../README.md") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Read across line breaks: a mention may wrap.
		text := strings.ReplaceAll(string(data), "\n", " ")
		for _, at := range permissionMention.FindAllStringSubmatchIndex(text, -1) {
			name, access := text[at[2]:at[3]], text[at[4]:at[5]]
			readWrite, ok := table[strings.ToLower(name)]
			// "with only Actions: Read, …" describes what happens short of the table.
			if !ok || strings.HasSuffix(strings.ToLower(text[:at[0]]), "only ") {
				continue
			}
			if says := strings.ToLower(access) != "read"; says != readWrite {
				line := strings.Count(string(data[:at[0]]), "\n") + 1
				t.Errorf("%s:%d says %q; docs/github-app.md#permissions-and-why says %s %s", filepath.Base(path), line, text[at[0]:at[1]], name, map[bool]string{true: "read and write", false: "read"}[readWrite])
			}
		}
	}
}
