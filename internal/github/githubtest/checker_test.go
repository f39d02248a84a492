package githubtest_test

import (
	"strings"
	"testing"
)

// The conformance tests are only as good as the checker: it must refuse
// bodies GitHub's schemas refuse.
func TestSchemaCheckerRefusesWhatTheDescriptionRefuses(t *testing.T) {
	doc := loadDescription(t, "api.github.com")
	c := &schemaChecker{doc: doc}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	runner := `{"id": 1, "name": "r", "os": "linux", "status": "online", "busy": false, "labels": [{"id": 1, "name": "self-hosted", "type": "read-only"}]}`
	cases := []struct {
		name   string
		schema map[string]any
		body   string
		want   string // "" = valid; else a fragment of the expected problem
	}{
		{"runner valid", ref("runner"), runner, ""},
		{"runner without busy", ref("runner"), strings.Replace(runner, `"busy": false, `, "", 1), `required property "busy"`},
		{"runner id as string", ref("runner"), strings.Replace(runner, `"id": 1, "name": "r"`, `"id": "1", "name": "r"`, 1), "not of type integer"},
		{"runner id fractional", ref("runner"), strings.Replace(runner, `"id": 1, "name": "r"`, `"id": 1.5, "name": "r"`, 1), "not of type integer"},
		{"label type outside enum", ref("runner"), strings.Replace(runner, `"read-only"`, `"builtin"`, 1), "is not one of"},
		{"runner version null (nullable)", ref("runner"), strings.Replace(runner, `"busy": false`, `"busy": false, "version": null`, 1), ""},
		{"runner name null (not nullable)", ref("runner"), strings.Replace(runner, `"name": "r"`, `"name": null`, 1), "null is not allowed"},
		{"basic error", ref("basic-error"), `{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}`, ""},
		{"basic error numeric status", ref("basic-error"), `{"message": "Not Found", "status": 404}`, "not of type string"},
		{"validation error simple without docs", ref("validation-error-simple"), `{"message": "x"}`, `required property "documentation_url"`},
		{"validation error value oneOf", ref("validation-error"), `{"message": "x", "documentation_url": "d", "errors": [{"code": "invalid", "value": 3}]}`, ""},
		{"validation error value matches no branch", ref("validation-error"), `{"message": "x", "documentation_url": "d", "errors": [{"code": "invalid", "value": true}]}`, "matches 0 of oneOf"},
		{"job bad date-time", ref("job"), jobBody(`"created_at": "yesterday"`), "not an RFC 3339 date-time"},
		{"job valid", ref("job"), jobBody(`"created_at": "2024-01-02T03:04:05Z"`), ""},
		{"unsupported keyword reported", map[string]any{"type": "string", "multipleOf": 2}, `"x"`, "not supported by the checker"},
		{"minItems", map[string]any{"type": "array", "minItems": jsonNumber("1")}, `[]`, "fewer than minItems"},
	}
	for _, tc := range cases {
		value, err := decodeJSON([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		problems := c.check(tc.schema, value, "body")
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: want valid, got %v", tc.name, problems)
		case tc.want != "" && !strings.Contains(strings.Join(problems, "\n"), tc.want):
			t.Errorf("%s: want a problem containing %q, got %v", tc.name, tc.want, problems)
		}
	}
}

func jobBody(createdAt string) string {
	return `{"id": 1, "node_id": "n", "run_id": 2, "run_url": "u", "head_sha": "s", "workflow_name": "w", "head_branch": "main",
		"name": "build", "url": "u", "html_url": null, "status": "queued", "conclusion": null, "started_at": "2024-01-02T03:04:05Z",
		"completed_at": null, "check_run_url": "u", "labels": ["self-hosted"], "runner_id": null, "runner_name": null,
		"runner_group_id": null, "runner_group_name": null, ` + createdAt + `}`
}

func jsonNumber(s string) any {
	v, _ := decodeJSON([]byte(s))
	return v
}
