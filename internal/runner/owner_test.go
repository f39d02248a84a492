package runner_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

// A record keeps its owner as the text it always had, so records written
// before the owner was typed read back the same, and the installation
// stays the record's own field.
func TestOwnerIsStoredAsItsText(t *testing.T) {
	for _, text := range []string{"octo-org", "octo-org/hello-world", "enterprise:acme", ""} {
		owner, err := runner.ParseOwner(text)
		if text == "" {
			owner, err = runner.Owner{}, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		inst := runner.Instance{Name: "i", Owner: owner.WithInstallation(42), InstallationID: 42}
		b, err := json.Marshal(&inst)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"owner":"` + text + `"`; !strings.Contains(string(b), want) {
			t.Fatalf("stored instance %s; want it to hold %s", b, want)
		}
		var back runner.Instance
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Owner != owner || back.GitHubOwner() != owner.WithInstallation(42) {
			t.Fatalf("owner %q read back as %+v (GitHubOwner %+v)", text, back.Owner, back.GitHubOwner())
		}
	}
	var bad runner.Job
	if err := json.Unmarshal([]byte(`{"owner":"a/b/c"}`), &bad); err == nil {
		t.Fatal("a stored owner that does not parse was accepted")
	}
}
