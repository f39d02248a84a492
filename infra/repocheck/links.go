package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is one link destination in a Markdown file.
type Link struct {
	Line   int // 1-based
	Target string
}

var (
	// refDef is a reference definition: [label]: destination "title".
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
)

// Links returns the destinations of the inline links and images
// ([text](dest), ![alt](dest)) and of the reference definitions in a
// Markdown document, outside code blocks and code spans, in order. It is
// not a full CommonMark parser: HTML (<a href>) and links whose text and
// destination are split by a line break are not seen, and what looks like
// a link inside an indented code block is.
func Links(doc []byte) []Link {
	var links []Link
	for i, line := range proseLines(doc) {
		if line == "" {
			continue
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: i + 1, Target: m[1]})
			continue
		}
		line = blankCodeSpans(line)
		for j := strings.Index(line, "]("); j >= 0; j = next(line, j) {
			if dest := destination(line[j+2:]); dest != "" {
				links = append(links, Link{Line: i + 1, Target: dest})
			}
		}
	}
	return links
}

func next(line string, j int) int {
	k := strings.Index(line[j+2:], "](")
	if k < 0 {
		return -1
	}
	return j + 2 + k
}

// destination reads a link destination from just after "](": either
// <anything but '>'> or a run without spaces whose parentheses balance.
// A title after it ("…") is not part of it.
func destination(s string) string {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "<") {
		if end := strings.IndexByte(s, '>'); end > 0 {
			return s[1:end]
		}
		return ""
	}
	depth := 0
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth == 0, unicode.IsSpace(r):
			return s[:i]
		case r == ')':
			depth--
		}
	}
	return "" // no closing parenthesis: not a link
}

// blankCodeSpans replaces the content of `code spans` with spaces, so that
// code such as `a[i](x)` is not read as a link. A span closes at the next
// run of as many backticks as opened it.
func blankCodeSpans(line string) string {
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		end := closingRun(b, i+n, n)
		if end < 0 {
			i += n // an unmatched run is literal text
			continue
		}
		for k := i + n; k < end; k++ {
			b[k] = ' '
		}
		i = end + n
	}
	return string(b)
}

// closingRun finds the next run of exactly n backticks in b from start.
func closingRun(b []byte, start, n int) int {
	for i := start; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		m := 0
		for i+m < len(b) && b[i+m] == '`' {
			m++
		}
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]*>`)
	htmlAnchor = regexp.MustCompile(`\b(?:id|name)="([^"]+)"`)
)

// Anchors returns the fragments a Markdown document can be linked to with,
// as GitHub renders it: each ATX heading's slug (lower case, punctuation
// dropped, each space a hyphen; a repeated slug gets -1, -2, …) and the id
// or name of HTML elements.
func Anchors(doc []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(doc) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			s := Slug(m[1])
			if n := seen[s]; n > 0 {
				anchors[s+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[s] = true
			}
			seen[s]++
		}
	}
	return anchors
}

// Slug is GitHub's anchor for a heading's Markdown text: the text as
// rendered (links reduced to their text, code spans to their content, tags
// and emphasis dropped), lower-cased, with every character that is not a
// letter, digit, space, hyphen or underscore removed and each space made a
// hyphen (not collapsed: "a — b" is "a--b").
func Slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b bytes.Buffer
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// proseLines returns doc's lines with those of fenced code blocks (fences
// included) blanked, so line numbers still count from 1 at index 0: what
// looks like a link or a heading inside a code block is neither.
func proseLines(doc []byte) []string {
	lines := strings.Split(string(doc), "\n")
	var open string // the fence of the code block we are in, "" outside
	for i, line := range lines {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
			case m[1][0] == open[0] && len(m[1]) >= len(open):
				open = ""
			}
			lines[i] = ""
			continue
		}
		if open != "" {
			lines[i] = ""
		}
	}
	return lines
}
