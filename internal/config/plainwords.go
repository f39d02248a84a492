package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var durationType = reflect.TypeFor[time.Duration]()

// valueProblem says in plain words why n cannot be a value of type t, or
// "" when it can. yaml.v3's own message ("cannot unmarshal !!str `ten`
// into int") names YAML tags and Go types, which a user has never seen.
func valueProblem(n *yaml.Node, t reflect.Type) string {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return ""
	}
	got := describeNode(n)
	line := fmt.Sprintf("line %d: ", n.Line)
	switch {
	case t == durationType:
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			return line + fmt.Sprintf("%s has no unit: write %q for %s seconds (%q for minutes, %q for hours)", n.Value, n.Value+"s", n.Value, n.Value+"m", n.Value+"h")
		}
		return line + fmt.Sprintf("must be a duration such as 30s, 5m or 1h30m, not %s", got)
	case t.Kind() == reflect.Bool:
		return line + fmt.Sprintf("must be true or false, not %s", got)
	case isInt(t):
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
			return line + fmt.Sprintf("%s is out of range", n.Value)
		}
		return line + fmt.Sprintf("must be a whole number, not %s", got)
	case t.Kind() == reflect.String:
		return line + fmt.Sprintf("must be a single value, not %s", got)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return line + fmt.Sprintf("must be a list, such as [a, b], not %s", got)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return line + fmt.Sprintf("must be a mapping of names to values, not %s", got)
		}
	}
	return yamlMessage(err)
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// describeNode names what the user wrote: `"ten"`, `a list`, `a mapping`.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	if strings.ContainsAny(v, "\n") {
		return "a block of text"
	}
	return fmt.Sprintf("%q", v)
}
