package ec2_test

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/providers/ec2"
)

// policyStatement is one statement of the IAM policy docs/providers-ec2.md
// tells operators to create.
type policyStatement struct {
	Sid       string
	Action    any
	Condition map[string]map[string]any
}

func (s policyStatement) actions() []string {
	switch a := s.Action.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			out = append(out, v.(string))
		}
		return out
	}
	return nil
}

func docPolicy(t *testing.T) []policyStatement {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers-ec2.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	at := strings.Index(text, "## IAM permissions")
	start := strings.Index(text[at:], "```json\n")
	end := strings.Index(text[at+start+8:], "```")
	if at < 0 || start < 0 || end < 0 {
		t.Fatal("docs/providers-ec2.md has no JSON policy under \"## IAM permissions\"")
	}
	var policy struct{ Statement []policyStatement }
	if err := json.Unmarshal([]byte(text[at+start+8:at+start+8+end]), &policy); err != nil {
		t.Fatalf("the documented policy is not JSON: %v", err)
	}
	return policy.Statement
}

// calledActions are the AWS actions the provider's code calls, read from
// its source: a call added without its permission fails here.
func calledActions(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`p\.(client|ssm|pricing)\.([A-Z][A-Za-z]+)\(|awsec2\.New([A-Za-z]+)Paginator\(`)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			action := "ec2:" + m[3]
			if m[2] != "" {
				action = map[string]string{"client": "ec2:", "ssm": "ssm:", "pricing": "pricing:"}[m[1]] + m[2]
			}
			if !slices.Contains(out, action) {
				out = append(out, action)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestTheDocumentedPolicyAllowsEveryCallTheProviderMakes(t *testing.T) {
	t.Parallel()
	policy := docPolicy(t)
	called := calledActions(t)
	if !slices.Contains(called, "ec2:ModifyInstanceAttribute") || !slices.Contains(called, "ec2:RunInstances") ||
		!slices.Contains(called, "ec2:DescribeInstanceTypes") {
		t.Fatalf("reading the provider's calls went wrong: %v", called)
	}
	for _, action := range called {
		if !slices.ContainsFunc(policy, func(s policyStatement) bool { return slices.Contains(s.actions(), action) }) {
			t.Errorf("the provider calls %s; the policy in docs/providers-ec2.md does not allow it", action)
		}
	}
}

// Everything that changes an existing machine is limited to this
// controller's machines, and retagging cannot touch the tags that decide
// whose a machine is.
func TestTheDocumentedPolicyScopesChangesToTheControllersMachines(t *testing.T) {
	t.Parallel()
	mutating := []string{"ec2:TerminateInstances", "ec2:StopInstances", "ec2:StartInstances", "ec2:ModifyInstanceAttribute", "ec2:DeleteTags"}
	for _, s := range docPolicy(t) {
		for _, a := range s.actions() {
			retag := a == "ec2:CreateTags" && s.Condition["StringEquals"]["ec2:CreateAction"] == nil
			if !slices.Contains(mutating, a) && !retag {
				continue
			}
			if s.Condition["StringEquals"]["aws:ResourceTag/runfleet:controller"] == nil {
				t.Errorf("statement %s allows %s without the runfleet:controller resource tag condition", s.Sid, a)
			}
			if a != "ec2:CreateTags" && a != "ec2:DeleteTags" {
				continue
			}
			keys, _ := s.Condition["ForAllValues:StringLike"]["aws:TagKeys"].([]any)
			allowed := func(key string) bool {
				return slices.ContainsFunc(keys, func(k any) bool { ok, _ := path.Match(k.(string), key); return ok })
			}
			for _, key := range ec2.PostLaunchTagKeys {
				if !allowed(key) {
					t.Errorf("statement %s does not let the provider set or remove %s", s.Sid, key)
				}
			}
			for _, key := range []string{"runfleet:controller", "runfleet:pool-id"} {
				if allowed(key) {
					t.Errorf("statement %s lets the role retag %s", s.Sid, key)
				}
			}
		}
	}
}
