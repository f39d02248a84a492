package githubtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// description is the part of a GitHub REST description the conformance
// tests read. Operations and components stay raw until needed: the files are
// 13–14 MB and only a few dozen entries are ever looked at.
type description struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`

	mu       sync.Mutex
	resolved map[string]any
}

// operation is one method of one path.
type operation struct {
	OperationID  string `json:"operationId"`
	ExternalDocs struct {
		URL string `json:"url"`
	} `json:"externalDocs"`
	Parameters  []json.RawMessage          `json:"parameters"`
	RequestBody json.RawMessage            `json:"requestBody"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

var descriptions = struct {
	mu     sync.Mutex
	loaded map[string]*description
}{loaded: map[string]*description{}}

// loadDescription reads a description once per test binary; a missing
// @octokit/openapi fails the test with how to install it.
func loadDescription(t *testing.T, flavour string) *description {
	t.Helper()
	path := githubtest.OpenAPIDescriptionPath(t, flavour)
	descriptions.mu.Lock()
	defer descriptions.mu.Unlock()
	if d, ok := descriptions.loaded[flavour]; ok {
		return d
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	d := &description{resolved: map[string]any{}}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	if len(d.Paths) == 0 || len(d.Components["schemas"]) == 0 {
		t.Fatalf("%s has no paths or schemas: is it GitHub's REST description?", path)
	}
	descriptions.loaded[flavour] = d
	return d
}

// operation returns the operation for method and path, or false.
func (d *description) operation(method, path string) (*operation, bool, error) {
	item, ok := d.Paths[path]
	if !ok {
		return nil, false, nil
	}
	raw, ok := item[strings.ToLower(method)]
	if !ok {
		return nil, false, nil
	}
	var op operation
	if err := json.Unmarshal(raw, &op); err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return &op, true, nil
}

// ref resolves a local reference such as "#/components/schemas/runner".
func (d *description) ref(ref string) (any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.resolved[ref]; ok {
		return v, nil
	}
	parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
	if len(parts) != 3 || parts[0] != "components" {
		return nil, fmt.Errorf("unsupported $ref %q (only #/components/<kind>/<name>)", ref)
	}
	raw, ok := d.Components[parts[1]][parts[2]]
	if !ok {
		return nil, fmt.Errorf("$ref %q does not exist", ref)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	d.resolved[ref] = v
	return v, nil
}

// deref follows $ref until the value is not a reference.
func (d *description) deref(v any) (map[string]any, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("expected an object, got %T", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		next, err := d.ref(ref)
		if err != nil {
			return nil, err
		}
		v = next
	}
	return nil, fmt.Errorf("$ref chain too long")
}

// responseSchema is the JSON schema the operation describes for status, or
// nil when that status has no body. described is false when the operation
// does not list the status.
func (d *description) responseSchema(op *operation, status int) (schema map[string]any, described bool, err error) {
	raw, ok := op.Responses[fmt.Sprint(status)]
	if !ok {
		return nil, false, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, true, err
	}
	resp, err := d.deref(v)
	if err != nil {
		return nil, true, err
	}
	content, _ := resp["content"].(map[string]any)
	if content == nil {
		return nil, true, nil
	}
	media, ok := content["application/json"].(map[string]any)
	if !ok {
		return nil, true, fmt.Errorf("status %d has content but no application/json", status)
	}
	schema, _ = media["schema"].(map[string]any)
	return schema, true, nil
}

// requestSchema is the operation's application/json request body schema.
func (d *description) requestSchema(op *operation) (map[string]any, error) {
	if len(op.RequestBody) == 0 {
		return nil, nil
	}
	v, err := decodeJSON(op.RequestBody)
	if err != nil {
		return nil, err
	}
	body, err := d.deref(v)
	if err != nil {
		return nil, err
	}
	content, _ := body["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	return schema, nil
}

// pathParameters are the names of the operation's path parameters.
func (d *description) pathParameters(op *operation) ([]string, error) {
	var names []string
	for _, raw := range op.Parameters {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		p, err := d.deref(v)
		if err != nil {
			return nil, err
		}
		if p["in"] == "path" {
			names = append(names, fmt.Sprint(p["name"]))
		}
	}
	return names, nil
}

// decodeJSON decodes keeping numbers exact, so integer checks are honest.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
