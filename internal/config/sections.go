package config

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// topLevelKey matches a line that starts a top-level section: a key at
// column 0 ("pools:", "engine: {workers: 2}").
var topLevelKey = regexp.MustCompile(`^([A-Za-z0-9_<][^:#\s]*)\s*:(\s|$)`)

// decodeSections reads a document the YAML parser gave up on. The parser
// cannot go past a syntax error, but a config's top-level sections are
// independent: each is parsed on its own (at its own line numbers, the
// other lines blanked), so one mistyped line in pools: still lets the
// unknown keys, bad values and invalid settings of webhook: and engine: be
// reported in the same run. Validation is then kept to the sections that
// were read: whatever a broken section holds is unknown.
func decodeSections(data []byte, syntaxErr error) *decoded {
	d := &decoded{cfg: &Config{}, onlyTop: map[string]bool{}}
	d.problems.add("", "not valid YAML: %s", yamlMessage(syntaxErr))
	reported := map[string]bool{yamlMessage(syntaxErr): true}

	lines := strings.SplitAfter(string(data), "\n")
	starts := sectionStarts(lines)
	var readable []string // the lines of every section that parses, in place
	w := newWalker()
	for i, start := range starts {
		end := len(lines)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		doc := blankExcept(lines, start, end)
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
			msg := yamlMessage(err)
			// An alias to an anchor in another section is not a problem
			// of its own.
			if !reported[msg] && !strings.Contains(msg, "unknown anchor") {
				d.problems.add("", "not valid YAML: %s", msg)
				reported[msg] = true
			}
			continue
		}
		d.onlyTop[topLevelKey.FindStringSubmatch(lines[start])[1]] = true
		w.checkNode(&root, reflect.TypeFor[Config](), "")
		readable = append(readable, doc)
	}
	d.problems = append(d.problems, w.found...)
	d.shadowed, d.meant = w.shadowed, w.meant
	if len(readable) > 0 {
		_ = yaml.NewDecoder(bytes.NewReader([]byte(mergeBlanked(readable)))).Decode(d.cfg)
	}
	return d
}

// sectionStarts returns the indices of the lines that start a top-level
// section; lines before the first (comments, a "---") belong to none.
func sectionStarts(lines []string) []int {
	var starts []int
	for i, l := range lines {
		if topLevelKey.MatchString(l) {
			starts = append(starts, i)
		}
	}
	return starts
}

// blankExcept keeps lines [start, end) and empties the others, so the
// parser's line numbers are the file's.
func blankExcept(lines []string, start, end int) string {
	var b strings.Builder
	for i, l := range lines {
		if i >= start && i < end {
			b.WriteString(l)
		} else {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// mergeBlanked overlays documents of equal line count whose non-blank
// lines do not overlap: the readable sections, as one document.
func mergeBlanked(docs []string) string {
	merged := strings.SplitAfter(docs[0], "\n")
	for _, doc := range docs[1:] {
		for i, l := range strings.SplitAfter(doc, "\n") {
			if i < len(merged) && strings.TrimSpace(l) != "" {
				merged[i] = l
			}
		}
	}
	return strings.Join(merged, "")
}
