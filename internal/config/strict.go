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

// decoded is a document read as far as it could be: the Config its valid
// parts give, the problems found on the way, and which fields those
// problems stand for, so that validation does not report them again.
type decoded struct {
	cfg      *Config
	problems problems
	// shadowed are the fields the problems are about (a badly typed value,
	// the field a misspelt key meant); "" stands for the whole document.
	shadowed []string
	// meant are the fields misspelt keys meant: a problem of their parent
	// that names them ("webhook: set secret_file or secret_env") is the
	// misspelling too.
	meant []string
	// onlyTop, when not nil, is the top-level keys whose sections could be
	// read (after a syntax error elsewhere); validation is kept to them.
	onlyTop map[string]bool
}

// decode reads one YAML document into a Config. Unknown fields and badly
// typed values are problems, found by a walk of the node tree that names
// each by its YAML path (yaml.v3's own errors name Go types); the rest of
// the document is still decoded, so validation can report the problems of
// the valid parts in the same run. A syntax error stops the YAML parser,
// but not the checks of the top-level sections it is not in (sections.go).
// The error is for a document that cannot be read at all.
func decode(data []byte) (*decoded, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Problem: "config is empty"}
		}
		return decodeSections(data, err), nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Problem: "config must be a single YAML document"}
	}

	w := newWalker()
	w.checkNode(&root, reflect.TypeFor[Config](), "")
	d := &decoded{cfg: &Config{}, problems: w.found, shadowed: w.shadowed, meant: w.meant}
	if len(w.found) > 0 {
		// What decodes, decodes; the walk has reported the rest.
		_ = root.Decode(d.cfg)
		return d, nil
	}
	// The walk mirrors yaml.v3's rules; KnownFields is the backstop in
	// case the two ever disagree.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(d.cfg); err != nil {
		return nil, &FieldError{Problem: yamlMessage(err)}
	}
	return d, nil
}

// keep drops the validation problems the decoding problems already stand
// for (a max_runners of "ten" is not also "must be ≥ 1"), and, after a
// syntax error, those of sections that could not be read.
func (d *decoded) keep(found problems) problems {
	var kept problems
	for _, err := range found {
		field := ""
		var fe *FieldError
		if errors.As(err, &fe) {
			field = fe.Field
		}
		if d.isShadowed(field) || (fe != nil && d.namesAMeantField(fe)) {
			continue
		}
		if d.onlyTop != nil && !d.onlyTop[topKey(field)] {
			continue
		}
		kept = append(kept, err)
	}
	return kept
}

func (d *decoded) isShadowed(field string) bool {
	for _, s := range d.shadowed {
		if s == "" || field == s || strings.HasPrefix(field, s+".") || strings.HasPrefix(field, s+"[") {
			return true
		}
	}
	return false
}

func (d *decoded) namesAMeantField(fe *FieldError) bool {
	for _, m := range d.meant {
		parent, name := "", m
		if i := strings.LastIndex(m, "."); i >= 0 {
			parent, name = m[:i], m[i+1:]
		}
		if fe.Field == parent && strings.Contains(fe.Problem, name) {
			return true
		}
	}
	return false
}

// topKey is the top-level key of a field path: "pools" for "pools[1].name".
func topKey(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}

// walker checks a document's nodes against Config. Aliases make the node
// tree a graph: expanding holds the values being checked (meeting one again
// through an alias is a cycle), and seen the (value, type) pairs
// already checked, so a value aliased many times, at any depth, is checked
// once and a small file cannot make the walk exponential.
type walker struct {
	found     problems
	shadowed  []string
	meant     []string
	expanding map[*yaml.Node]bool
	seen      map[walked]bool
}

func newWalker() *walker {
	return &walker{expanding: map[*yaml.Node]bool{}, seen: map[walked]bool{}}
}

// problem records a problem with the value at path.
func (w *walker) problem(path, format string, args ...any) {
	w.found.add(path, format, args...)
	w.shadowed = append(w.shadowed, path)
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
		w.problem(path, "line %d: alias *%s is inside the value it names", alias.Line, alias.Value)
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
			w.problem(path, "line %d: must be a list", n.Line)
			return
		}
		for i, item := range n.Content {
			w.checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			w.checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		if problem := valueProblem(n, t); problem != "" {
			w.problem(path, "%s", problem)
		}
	}
}

func (w *walker) checkMapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.problem(path, "line %d: must be a mapping of fields", n.Line)
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
			w.problem(field, "line %d: set twice (first at line %d)", key.Line, first)
			continue
		}
		set[key.Value] = key.Line
		ft, ok := fields[key.Value]
		if !ok {
			w.unknownField(field, key, fields, path)
			continue
		}
		w.checkNode(value, ft, field)
	}
}

// unknownField reports a key t does not have, with the field it most
// likely meant; that field's own problems (say, "required") are then not
// reported too: the fix is the spelling.
func (w *walker) unknownField(field string, key *yaml.Node, fields map[string]reflect.Type, path string) {
	known := make(map[string]bool, len(fields))
	for name := range fields {
		known[name] = true
	}
	if meant := suggestField(key.Value, known); meant != "" {
		w.found.add(field, "line %d: unknown field; did you mean %q?", key.Line, meant)
		w.shadowed = append(w.shadowed, joinPath(path, meant))
		w.meant = append(w.meant, joinPath(path, meant))
		return
	}
	w.found.add(field, "line %d: unknown field", key.Line)
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
