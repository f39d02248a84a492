package infra

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// appManifest is the part of a GitHub App manifest runfleet depends on.
type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// The manifest grants exactly what the engine's GitHub calls need
// (docs/github-app.md explains each) and subscribes to workflow_job.
func TestGitHubAppManifest(t *testing.T) {
	raw, err := os.ReadFile("github-app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m appManifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	// The manifest asks for the permissions docs/github-app.md's table
	// lists, but the repository-pools-only one (permissions_test.go).
	want := map[string]string{}
	for _, p := range appPermissionTable(t) {
		if !p.repositoryPoolsOnly {
			want[p.manifestKey] = p.manifestAccess()
		}
	}
	if len(want) == 0 {
		t.Fatal("docs/github-app.md's permission table lists nothing")
	}
	if len(m.DefaultPermissions) != len(want) {
		t.Errorf("permissions %v, want exactly %v (docs/github-app.md#permissions-and-why)", m.DefaultPermissions, want)
	}
	for k, v := range want {
		if m.DefaultPermissions[k] != v {
			t.Errorf("permission %s = %q, want %q (docs/github-app.md#permissions-and-why)", k, m.DefaultPermissions[k], v)
		}
	}
	if !slices.Equal(m.DefaultEvents, []string{"workflow_job"}) {
		t.Errorf("events %v, want [workflow_job]", m.DefaultEvents)
	}
	if m.Public || m.Name == "" || m.URL == "" || !m.HookAttributes.Active || m.HookAttributes.URL == "" || m.RedirectURL == "" {
		t.Errorf("manifest %+v", m)
	}
}
