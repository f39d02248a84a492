package lambdafn_test

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deployment is what a stack deployed for a test resolves template.yaml's
// values to: the logical ids and parameters !Ref names, the attributes
// !GetAtt reads and the conditions !If tests. A parameter not in params
// takes its Default, as `sam deploy` would.
type deployment struct {
	refs       map[string]string
	getAtts    map[string]string
	conditions map[string]bool
}

// templateEnv is the environment template.yaml gives function (a logical
// id): Globals' variables overlaid with the function's own, each resolved
// against d. A value it cannot resolve fails the test, naming it: a
// variable the template sets must never be silently left out.
func templateEnv(t testing.TB, function string, d deployment) map[string]string {
	t.Helper()
	tmpl := readTemplate(t)
	params := tmpl.child("Parameters")
	vars := map[string]*yaml.Node{}
	for _, source := range []*yaml.Node{
		tmpl.child("Globals").child("Function").child("Environment").child("Variables").node,
		tmpl.child("Resources").child(function).child("Properties").child("Environment").child("Variables").node,
	} {
		if source == nil {
			continue
		}
		for i := 0; i+1 < len(source.Content); i += 2 {
			vars[source.Content[i].Value] = source.Content[i+1]
		}
	}
	if tmpl.child("Resources").child(function).node == nil {
		t.Fatalf("template.yaml has no resource %s", function)
	}
	env := map[string]string{}
	var problems []string
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value, err := d.resolve(vars[name], params)
		if errors.Is(err, errNoValue) {
			continue // !Ref AWS::NoValue: the variable is not set
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		env[name] = value
	}
	if len(problems) > 0 {
		t.Fatalf("%s: template.yaml sets variables this test cannot map to its local stack (map them in the test):\n  %s",
			function, strings.Join(problems, "\n  "))
	}
	return env
}

// errNoValue is !Ref AWS::NoValue: the property is left out.
var errNoValue = errors.New("AWS::NoValue")

// resolve evaluates a template value: a scalar, !Ref, !GetAtt, !If or
// !Join of a list parameter.
// Anything else is an error.
func (d deployment) resolve(n *yaml.Node, params yamlNode) (string, error) {
	switch tag := n.ShortTag(); {
	case tag == "!Ref" && n.Kind == yaml.ScalarNode && n.Value == "AWS::NoValue":
		return "", errNoValue
	case tag == "!Ref" && n.Kind == yaml.ScalarNode:
		if v, ok := d.refs[n.Value]; ok {
			return v, nil
		}
		if def := params.child(n.Value).child("Default").node; def != nil && def.Kind == yaml.ScalarNode {
			return def.Value, nil
		}
		return "", fmt.Errorf("!Ref %s: not a resource this test deploys nor a parameter with a default", n.Value)
	case tag == "!GetAtt" && n.Kind == yaml.ScalarNode:
		if v, ok := d.getAtts[n.Value]; ok {
			return v, nil
		}
		return "", fmt.Errorf("!GetAtt %s: no local equivalent", n.Value)
	case tag == "!If" && n.Kind == yaml.SequenceNode && len(n.Content) == 3:
		cond, ok := d.conditions[n.Content[0].Value]
		if !ok {
			return "", fmt.Errorf("!If %s: condition not decided by this test", n.Content[0].Value)
		}
		if cond {
			return d.resolve(n.Content[1], params)
		}
		return d.resolve(n.Content[2], params)
	case tag == "!Join" && n.Kind == yaml.SequenceNode && len(n.Content) == 2:
		// A list parameter joined, as the extra Apps' secret ARNs are: its
		// default, a comma-separated string, is the joined value.
		return d.resolve(n.Content[1], params)
	case strings.HasPrefix(tag, "!!") && n.Kind == yaml.ScalarNode:
		return n.Value, nil
	default:
		return "", fmt.Errorf("%s at line %d: not resolved by this test", tag, n.Line)
	}
}

// yamlNode walks a YAML mapping tree; a missing key gives a nil node, so
// lookups chain.
type yamlNode struct{ node *yaml.Node }

func (y yamlNode) child(key string) yamlNode {
	if y.node == nil || y.node.Kind != yaml.MappingNode {
		return yamlNode{}
	}
	for i := 0; i+1 < len(y.node.Content); i += 2 {
		if y.node.Content[i].Value == key {
			return yamlNode{y.node.Content[i+1]}
		}
	}
	return yamlNode{}
}

func readTemplate(t testing.TB) yamlNode {
	t.Helper()
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	if len(doc.Content) == 0 {
		t.Fatal("template.yaml is empty")
	}
	return yamlNode{doc.Content[0]}
}
