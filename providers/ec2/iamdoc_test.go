package ec2_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ec2Calls finds the EC2 API calls the provider's code makes: every
// client.<Operation>( and awsec2.New<Operation>Paginator( outside tests.
var ec2Calls = regexp.MustCompile(`client\.([A-Z]\w+)\(|awsec2\.New(\w+)Paginator\(`)

// The IAM policy docs/providers-ec2.md gives operators must allow every EC2
// call the provider makes: a call added to the code without its permission
// fails here, not in someone's account at the first create.
func TestDocumentedPolicyAllowsEveryCallTheProviderMakes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var called []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ec2Calls.FindAllStringSubmatch(string(src), -1) {
			called = append(called, "ec2:"+m[1]+m[2])
		}
	}
	slices.Sort(called)
	called = slices.Compact(called)
	if !slices.Contains(called, "ec2:DescribeInstanceTypes") || !slices.Contains(called, "ec2:RunInstances") {
		t.Fatalf("found calls %v; the pattern no longer finds the provider's calls", called)
	}

	allowed := documentedActions(t)
	for _, c := range called {
		if !slices.Contains(allowed, c) {
			t.Errorf("the provider calls %s; the IAM policy in docs/providers-ec2.md does not allow it", c)
		}
	}
}

// documentedActions are the actions of the JSON policy under "## IAM
// permissions" in docs/providers-ec2.md.
func documentedActions(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers-ec2.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## IAM permissions")
	if !ok {
		t.Fatal(`docs/providers-ec2.md has no "## IAM permissions" section`)
	}
	_, block, ok := strings.Cut(section, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the IAM permissions section has no ```json policy")
	}
	var policy struct {
		Statement []struct {
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(block), &policy); err != nil {
		t.Fatalf("the documented policy is not valid JSON: %v", err)
	}
	var out []string
	for _, st := range policy.Statement {
		var one string
		var many []string
		if json.Unmarshal(st.Action, &one) == nil {
			out = append(out, one)
		} else if err := json.Unmarshal(st.Action, &many); err == nil {
			out = append(out, many...)
		} else {
			t.Fatalf("statement action %s is neither a string nor a list", st.Action)
		}
	}
	return out
}
