package infra

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// value is a piece of a CloudFormation template in plain Go form: maps,
// slices, strings, numbers, booleans. A short-form intrinsic (!Ref X,
// !GetAtt X.Arn, !Sub ..., !If [...]) becomes a one-key map from its tag
// to its operand, e.g. {"!Ref": "X"}, so tests can follow references
// without knowing every function. Missing keys give a value holding nil,
// so lookups chain.
type value struct{ v any }

// template is the whole of template.yaml.
type template struct{ value }

func loadTemplate(t *testing.T) template {
	t.Helper()
	data, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	plain, err := fromNode(&doc)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	return template{value{plain}}
}

// fromNode converts a YAML node tree, treating every application tag
// (anything but YAML's own !!str, !!int, ...) as an intrinsic function.
func fromNode(n *yaml.Node) (any, error) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		return fromNode(n.Content[0])
	}
	if n.Kind == yaml.AliasNode {
		return fromNode(n.Alias)
	}
	tag := n.ShortTag()
	if strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") {
		if n.Kind == yaml.ScalarNode {
			return map[string]any{tag: n.Value}, nil
		}
		untagged := *n
		untagged.Tag = ""
		operand, err := fromNode(&untagged)
		if err != nil {
			return nil, err
		}
		return map[string]any{tag: operand}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := fromNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

func (t template) resource(id string) value { return t.get("Resources").get(id) }

func (t template) resourcesOfType(typ string) map[string]value {
	found := map[string]value{}
	for id, r := range t.get("Resources").mapping() {
		if res := (value{r}); res.get("Type").str() == typ {
			found[id] = res
		}
	}
	return found
}

func (t template) onlyResourceOfType(tb testing.TB, typ string) string {
	tb.Helper()
	found := t.resourcesOfType(typ)
	if len(found) != 1 {
		tb.Fatalf("template.yaml has %d resources of type %s, want 1", len(found), typ)
	}
	for id := range found {
		return id
	}
	return ""
}

func (v value) get(key string) value {
	m, _ := v.v.(map[string]any)
	return value{m[key]}
}

// or is v, or fallback when v is absent (a function property or Globals).
func (v value) or(fallback value) value {
	if v.v == nil {
		return fallback
	}
	return v
}

func (v value) mapping() map[string]any { m, _ := v.v.(map[string]any); return m }
func (v value) list() []any             { l, _ := v.v.([]any); return l }
func (v value) str() string             { s, _ := v.v.(string); return s }

func (v value) strs() []string {
	var out []string
	for _, e := range v.list() {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (v value) num(tb testing.TB) float64 {
	tb.Helper()
	switch n := v.v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	tb.Fatalf("%s is not a number", asJSON(v.v))
	return 0
}

// intrinsic returns the operand of the intrinsic function named in short
// (!Ref) or long (Ref, Fn::GetAtt) form.
func (v value) intrinsic(short, long string) (any, bool) {
	m := v.mapping()
	if len(m) != 1 {
		return nil, false
	}
	if op, ok := m[short]; ok {
		return op, true
	}
	op, ok := m[long]
	return op, ok
}

// ref is the logical id or parameter named by !Ref, or "".
func (v value) ref() string {
	op, _ := v.intrinsic("!Ref", "Ref")
	s, _ := op.(string)
	return s
}

// getAtt is the logical id whose attribute !GetAtt reads, or "".
func (v value) getAtt() string {
	op, _ := v.intrinsic("!GetAtt", "Fn::GetAtt")
	switch op := op.(type) {
	case string:
		id, _, _ := strings.Cut(op, ".")
		return id
	case []any:
		if len(op) > 0 {
			s, _ := op[0].(string)
			return s
		}
	}
	return ""
}

// sub is the string of a one-argument !Sub, or "".
func (v value) sub() string {
	op, _ := v.intrinsic("!Sub", "Fn::Sub")
	s, _ := op.(string)
	return s
}
