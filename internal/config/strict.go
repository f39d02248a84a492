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

	var found problems
	checkNode(&root, reflect.TypeFor[Config](), "", &found)
	if len(found) > 0 {
		return nil, errors.Join(found...)
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

// checkNode reports fields of n that t does not have and values that do not
// decode into their field's type.
func checkNode(n *yaml.Node, t reflect.Type, path string, out *problems) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			checkNode(c, t, path, out)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value leaves the field at its zero value
	}
	switch {
	case t.Kind() == reflect.Struct:
		checkMapping(n, t, path, out)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			out.add(path, "line %d: must be a list", n.Line)
			return
		}
		for i, item := range n.Content {
			checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			out.add(path, "%s", yamlMessage(err))
		}
	}
}

func checkMapping(n *yaml.Node, t reflect.Type, path string, out *problems) {
	if n.Kind != yaml.MappingNode {
		out.add(path, "line %d: must be a mapping of fields", n.Line)
		return
	}
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Tag == "!!merge" {
			checkMerge(value, t, path, out)
			continue
		}
		field := joinPath(path, key.Value)
		ft, ok := fields[key.Value]
		if !ok {
			out.add(field, "line %d: unknown field", key.Line)
			continue
		}
		checkNode(value, ft, field, out)
	}
}

// checkMerge follows a YAML merge key ("<<: *anchor" or a list of anchors).
func checkMerge(n *yaml.Node, t reflect.Type, path string, out *problems) {
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			checkNode(c, t, path, out)
		}
		return
	}
	checkNode(n, t, path, out)
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
