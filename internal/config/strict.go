package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeStrict decodes one YAML document into a Config, refusing unknown
// fields. yaml.v3's own errors name Go types and line numbers; the node walk
// first reports every unknown field and badly typed value by its YAML path,
// which is what a user can find in their file.
func decodeStrict(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Problem: "config is empty"}
		}
		return nil, &FieldError{Problem: "not valid YAML: " + yamlMessage(err)}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Problem: "config must be a single YAML document"}
	}

	w := walker{expanding: map[*yaml.Node]bool{}, seen: map[walked]bool{}}
	w.checkNode(&root, reflect.TypeFor[Config](), "")
	if len(w.found) > 0 {
		return nil, errors.Join(w.found...)
	}

	// The walk above mirrors yaml.v3's rules; KnownFields is the backstop in
	// case the two ever disagree.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var cfg Config
	if err := strict.Decode(&cfg); err != nil {
		return nil, &FieldError{Problem: yamlMessage(err)}
	}
	return &cfg, nil
}

// walker checks a document's nodes against Config. Aliases make the node
// tree a graph: expanding holds the values being checked (meeting one again
// through an alias is a cycle), and seen the (value, type) pairs
// already checked, so a value aliased many times, at any depth, is checked
// once and a small file cannot make the walk exponential.
type walker struct {
	found     problems
	expanding map[*yaml.Node]bool
	seen      map[walked]bool
}

type walked struct {
	node *yaml.Node
	t    reflect.Type
}

// checkNode reports fields of n that t does not have and values that do not
// decode into their field's type.
func (w *walker) checkNode(n *yaml.Node, t reflect.Type, path string) {
	alias := n
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if w.expanding[n] {
		w.found.add(path, "line %d: alias *%s is inside the value it names", alias.Line, alias.Value)
		return
	}
	w.expanding[n] = true
	defer delete(w.expanding, n)
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			w.checkNode(c, t, path)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.seen[walked{n, t}] {
		return
	}
	w.seen[walked{n, t}] = true
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value leaves the field at its zero value
	}
	switch {
	case t.Kind() == reflect.Struct:
		w.checkMapping(n, t, path)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			w.found.add(path, "line %d: must be a list", n.Line)
			return
		}
		for i, item := range n.Content {
			w.checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			w.found.add(path, "%s", yamlMessage(err))
		}
	}
}

func (w *walker) checkMapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.found.add(path, "line %d: must be a mapping of fields", n.Line)
		return
	}
	fields := yamlFields(t)
	set := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Tag == "!!merge" {
			w.checkMerge(value, t, path)
			continue
		}
		field := joinPath(path, key.Value)
		if key.Kind != yaml.ScalarNode || key.Value == "" {
			w.found.add(joinPath(path, fmt.Sprintf("<key at line %d>", key.Line)), "line %d: unknown field", key.Line)
			continue
		}
		if first, dup := set[key.Value]; dup {
			w.found.add(field, "line %d: set twice (first at line %d)", key.Line, first)
			continue
		}
		set[key.Value] = key.Line
		ft, ok := fields[key.Value]
		if !ok {
			w.found.add(field, "line %d: unknown field", key.Line)
			continue
		}
		w.checkNode(value, ft, field)
	}
}

// checkMerge follows a YAML merge key ("<<: *anchor" or a list of anchors).
func (w *walker) checkMerge(n *yaml.Node, t reflect.Type, path string) {
	merged := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		merged = n.Content
	}
	for _, m := range merged {
		if m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
			w.found.add(joinPath(path, "<<"), "line %d: << needs a mapping (usually *anchor) or a list of them", m.Line)
			continue
		}
		w.checkNode(m, t, path)
	}
}

// yamlFields maps the YAML names of t's decodable fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlMessage turns a yaml.v3 error into one line without the "yaml:" prefix.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}
