package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runbookEntry is one "## <LogicalId>" section of docs/runbook.md.
type runbookEntry struct {
	id   string
	body string
}

// runbookEntries reads docs/runbook.md's alarm entries: level-2 headings
// that are one word (an alarm's logical id). Headings of several words
// are the runbook's own sections.
func runbookEntries(t *testing.T) (entries []runbookEntry, text string) {
	t.Helper()
	data, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatalf("docs/runbook.md: %v", err)
	}
	text = string(data)
	var cur *runbookEntry
	for _, line := range strings.Split(text, "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			cur = nil
			if title = strings.TrimSpace(title); !strings.Contains(title, " ") {
				entries = append(entries, runbookEntry{id: title})
				cur = &entries[len(entries)-1]
			}
			continue
		}
		if cur != nil {
			cur.body += line + "\n"
		}
	}
	return entries, text
}

// Every alarm has exactly one runbook entry, every entry is an alarm's,
// each answers the three questions in order, and the alarm's description
// links to it.
func TestEveryAlarmHasARunbookEntry(t *testing.T) {
	tpl := loadTemplate(t)
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	alerts := prometheusAlerts(t)
	entries, _ := runbookEntries(t)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.id]++
		_, isAlarm := alarms[e.id]
		if _, isAlert := alerts[e.id]; !isAlarm && !isAlert {
			t.Errorf("docs/runbook.md has an entry %q, which is neither an alarm of template.yaml nor an alert of %s", e.id, alertRulesPath)
			continue
		}
		last := -1
		for _, part := range []string{"**What it means.**", "**What to look at.**", "**What to do.**"} {
			at := strings.Index(e.body, part)
			if at < 0 || at < last {
				t.Errorf("runbook entry %s: %s missing or out of order", e.id, part)
			}
			last = at
		}
	}
	for _, id := range sortedKeys(alarms) {
		if seen[id] != 1 {
			t.Errorf("alarm %s has %d entries in docs/runbook.md, want 1 (a heading \"## %s\")", id, seen[id], id)
		}
		desc := alarms[id].get("Properties").get("AlarmDescription").str()
		if link := "docs/runbook.md#" + strings.ToLower(id); !strings.Contains(desc, link) {
			t.Errorf("%s AlarmDescription %q does not link to %s", id, desc, link)
		}
	}
}

var widgetMention = regexp.MustCompile(`\*([^*\n]+)\* widget`)

// The runbook sends the reader to dashboard widgets by title: each entry
// names at least one, and every one named exists.
func TestRunbookNamesDashboardWidgets(t *testing.T) {
	tpl := loadTemplate(t)
	var titles []string
	for _, w := range dashboardWidgets(t, tpl) {
		titles = append(titles, w.Properties.Title)
	}
	entries, text := runbookEntries(t)
	for _, m := range widgetMention.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(titles, m[1]) {
			t.Errorf("docs/runbook.md names the widget %q; the dashboard has %q", m[1], titles)
		}
	}
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	for _, e := range entries {
		// An embedded mode's alert alone has no CloudWatch dashboard.
		if _, isAlarm := alarms[e.id]; isAlarm && !widgetMention.MatchString(e.body) {
			t.Errorf("runbook entry %s names no dashboard widget", e.id)
		}
	}
}

var runfleetCommand = regexp.MustCompile("(?m)runfleet ((?:instances|provider|jobs) [a-z]+|reconcile|serve)((?: [^`\\n]*)?)")

// The CLI commands the runbook gives exist, with the flags it uses: an
// operator following it at night must not meet "unknown flag".
func TestRunbookCLICommandsExist(t *testing.T) {
	_, text := runbookEntries(t)
	files, err := filepath.Glob("../cmd/runfleet/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/runfleet: %v", err)
	}
	var source strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		source.Write(data)
	}
	src := source.String()
	matches := runfleetCommand.FindAllStringSubmatch(text, -1)
	if len(matches) == 0 {
		t.Fatal("docs/runbook.md gives no runfleet command")
	}
	for _, m := range matches {
		if !strings.Contains(src, "runfleet "+m[1]) {
			t.Errorf("docs/runbook.md runs %q, which cmd/runfleet's usage does not list", "runfleet "+m[1])
		}
		for _, flag := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(m[2], -1) {
			if !strings.Contains(src, `"`+flag[1]+`"`) {
				t.Errorf("docs/runbook.md runs %q with --%s, which cmd/runfleet does not define", "runfleet "+m[1], flag[1])
			}
		}
	}
}

var (
	msgEquals = regexp.MustCompile(`msg = "([^"]+)"`)
	msgIn     = regexp.MustCompile(`msg in \[([^\]]+)\]`)
	quoted    = regexp.MustCompile(`"([^"]+)"`)
)

// The log queries the runbook gives match messages the code logs: a
// reworded log line would otherwise leave a query that finds nothing,
// which reads as "nothing went wrong".
func TestRunbookLogQueriesMatchLoggedMessages(t *testing.T) {
	_, text := runbookEntries(t)
	var messages []string
	for _, m := range msgEquals.FindAllStringSubmatch(text, -1) {
		messages = append(messages, m[1])
	}
	for _, m := range msgIn.FindAllStringSubmatch(text, -1) {
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			messages = append(messages, q[1])
		}
	}
	if len(messages) == 0 {
		t.Fatal("docs/runbook.md queries no log message")
	}
	var source strings.Builder
	err := filepath.WalkDir("../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		source.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	src := source.String()
	for _, msg := range messages {
		if !strings.Contains(src, `"`+msg+`"`) {
			t.Errorf("docs/runbook.md queries the log message %q, which nothing in internal/ logs", msg)
		}
	}
}
