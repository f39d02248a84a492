package main

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// tree is the set of tracked files a link may point to.
type tree struct {
	files   map[string]bool
	dirs    map[string]bool
	read    func(name string) ([]byte, error)
	anchors map[string]map[string]bool // per Markdown file, read once
}

func newTree(tracked []string, read func(string) ([]byte, error)) *tree {
	t := &tree{files: map[string]bool{}, dirs: map[string]bool{}, read: read, anchors: map[string]map[string]bool{}}
	for _, f := range tracked {
		t.files[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			t.dirs[d] = true
		}
	}
	return t
}

// scheme starts an absolute URL (https:, mailto:, …), which is not checked.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// check says what is wrong with target, a link in the tracked Markdown
// file from, or "" when it resolves: to a tracked file or directory, and
// for a #fragment into a Markdown file, to one of its headings.
func (t *tree) check(from, target string) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	p, frag, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	switch {
	case p == "":
		p = from // #fragment: a heading of this file
	case strings.HasPrefix(p, "/"):
		p = path.Clean(strings.TrimPrefix(p, "/")) // GitHub: from the repository's root
	default:
		p = path.Join(path.Dir(from), p)
	}
	switch {
	case p == ".." || strings.HasPrefix(p, "../"):
		return "points outside the repository"
	case t.dirs[p] || p == ".":
		return ""
	case !t.files[p]:
		return "no such file in the repository (git ls-files)"
	case frag == "" || !strings.HasSuffix(p, ".md"):
		return ""
	}
	if _, ok := t.anchors[p]; !ok {
		doc, err := t.read(p)
		if err != nil {
			return err.Error()
		}
		t.anchors[p] = Anchors(doc)
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if !t.anchors[p][frag] {
		return "no heading #" + frag + " in " + p
	}
	return ""
}
