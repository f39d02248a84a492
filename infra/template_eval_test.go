package infra

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

// walkStatements calls f on every statement, looking inside !If branches.
func walkStatements(statements value, f func(value)) {
	for _, st := range statements.list() {
		s := value{st}
		if branches := s.get("!If").list(); len(branches) == 3 {
			walkStatements(value{branches[1:]}, f)
			continue
		}
		if s.get("Effect").v != nil {
			f(s)
		}
	}
}

func sortAttributeDefinitions(props map[string]any) {
	defs, _ := props["AttributeDefinitions"].([]any)
	sort.Slice(defs, func(i, j int) bool { return asJSON(defs[i]) < asJSON(defs[j]) })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// canonical gives v the types encoding/json would (float64 numbers), so a
// value from YAML compares equal to the same value from JSON.
func canonical(t *testing.T, v any) any {
	t.Helper()
	if val, ok := v.(value); ok {
		v = val.v
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The config a stack gets when RunfleetConfig is left at its default must
// be one the functions accept, answered as Lambda answers its secrets.
func TestDefaultConfigIsValid(t *testing.T) {
	tpl := loadTemplate(t)
	yamlText := tpl.get("Parameters").get("RunfleetConfig").get("Default").str()
	if yamlText == "" {
		t.Fatal("RunfleetConfig has no default")
	}
	if len(yamlText) > 4096 {
		t.Errorf("RunfleetConfig default is %d bytes; CloudFormation parameter values and standard SSM parameters hold 4096", len(yamlText))
	}
	secrets := map[string]string{"RUNFLEET_WEBHOOK_SECRET": "a-webhook-secret"}
	lookup := func(name string) (string, bool) { v, ok := secrets[name]; return v, ok }
	noFiles := func(string) ([]byte, error) { return nil, errors.New("no files on Lambda") }
	cfg, err := config.Parse([]byte(yamlText), lookup, noFiles)
	if err != nil {
		t.Fatalf("RunfleetConfig default is invalid:\n%v\n%s", err, yamlText)
	}
	if len(cfg.Pools) == 0 {
		t.Error("RunfleetConfig default has no pools")
	}
}

// ifBranches splits an !If into its condition and its two values.
func ifBranches(tb testing.TB, v value) (cond string, then, otherwise value) {
	tb.Helper()
	op, _ := v.intrinsic("!If", "Fn::If")
	args, _ := op.([]any)
	if len(args) != 3 {
		tb.Fatalf("%s is not an !If [condition, then, else]", asJSON(v.v))
	}
	cond, _ = args[0].(string)
	return cond, value{args[1]}, value{args[2]}
}

// condition evaluates the template's condition name with the given
// parameter values, as CloudFormation would: !Equals of !Ref'd parameters
// and literals, !Not, !And, !Or and !Condition.
func (t template) condition(tb testing.TB, name string, params map[string]string) bool {
	tb.Helper()
	def := t.get("Conditions").get(name)
	if def.v == nil {
		tb.Fatalf("no condition %s", name)
	}
	return t.evalCondition(tb, def, params)
}

func (t template) evalCondition(tb testing.TB, v value, params map[string]string) bool {
	tb.Helper()
	operands := func(short, long string) ([]value, bool) {
		op, ok := v.intrinsic(short, long)
		var out []value
		for _, o := range (value{op}).list() {
			out = append(out, value{o})
		}
		return out, ok
	}
	scalar := func(o value) string {
		if ref := o.ref(); ref != "" {
			p, ok := params[ref]
			if !ok {
				tb.Fatalf("condition refers to %s, which has no value", ref)
			}
			return p
		}
		return fmt.Sprint(o.v)
	}
	if ops, ok := operands("!Equals", "Fn::Equals"); ok && len(ops) == 2 {
		return scalar(ops[0]) == scalar(ops[1])
	}
	if ops, ok := operands("!Not", "Fn::Not"); ok && len(ops) == 1 {
		return !t.evalCondition(tb, ops[0], params)
	}
	if ops, ok := operands("!And", "Fn::And"); ok {
		all := true
		for _, o := range ops {
			all = t.evalCondition(tb, o, params) && all
		}
		return all
	}
	if ops, ok := operands("!Or", "Fn::Or"); ok {
		anyTrue := false
		for _, o := range ops {
			anyTrue = t.evalCondition(tb, o, params) || anyTrue
		}
		return anyTrue
	}
	if op, ok := v.intrinsic("!Condition", "Condition"); ok {
		name, _ := op.(string)
		return t.condition(tb, name, params)
	}
	tb.Fatalf("cannot evaluate condition %s", asJSON(v.v))
	return false
}
