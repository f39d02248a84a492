package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string // "line:target"
	}{
		{"inline", "See [the runbook](docs/runbook.md).", []string{"1:docs/runbook.md"}},
		{"fragment and title", `[a](deploy.md#iam "IAM") and [b](#config)`, []string{"1:deploy.md#iam", "1:#config"}},
		{"image", "![chart](img/chart.svg)", []string{"1:img/chart.svg"}},
		{"angle brackets", "[x](<docs/a b.md>)", []string{"1:docs/a b.md"}},
		{"balanced parentheses", "[x](https://en.wikipedia.org/wiki/Go_(language)) after", []string{"1:https://en.wikipedia.org/wiki/Go_(language)"}},
		{"code text is still a link", "[`lessons.md`](../shared/lessons.md)", []string{"1:../shared/lessons.md"}},
		{"text over two lines", "[the design\nnotes](docs/design-notes.md)", []string{"2:docs/design-notes.md"}},
		{"reference definition", "[ref]: docs/x.md \"title\"\n", []string{"1:docs/x.md"}},
		{"code span", "call `f[i](x)` here", nil},
		{"double-backtick code span", "``a ` [b](c.md)`` and [d](e.md)", []string{"1:e.md"}},
		{"fenced block", "```go\n[a](b.md)\n```\n[c](d.md)", []string{"4:d.md"}},
		{"tilde fence with backticks inside", "~~~\n```\n[a](b.md)\n~~~\n[c](d.md)", []string{"5:d.md"}},
		{"unclosed destination", "[a](b.md", nil},
		{"brackets without a link", "a [note] (not a link) [x]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, l := range Links([]byte(tc.doc)) {
				got = append(got, fmt.Sprintf("%d:%s", l.Line, l.Target))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Links(%q)\n got %q\nwant %q", tc.doc, got, tc.want)
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Operator force delete":                                 "operator-force-delete",
		"The job ledger: demand outlives supply":                "the-job-ledger-demand-outlives-supply",
		"Metrics: one vocabulary for Prometheus and CloudWatch": "metrics-one-vocabulary-for-prometheus-and-cloudwatch",
		"`make lint` and `min_idle`":                            "make-lint-and-min_idle",
		"Shapes — and policy":                                   "shapes--and-policy",
		"[Linked](x.md) *emphasis*":                             "linked-emphasis",
		"ReconcilerNotRunningAlarm":                             "reconcilernotrunningalarm",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	docs := map[string]string{
		"README.md":      "# runfleet\n## Layout\n## Layout\n",
		"docs/deploy.md": "# Deploy\n## IAM\n<a id=\"custom\"></a>\n```\n## not a heading\n```\n",
		"docs/img.svg":   "",
		"infra/x.go":     "",
	}
	var tracked []string
	for name := range docs {
		tracked = append(tracked, name)
	}
	repo := newTree(tracked, func(name string) ([]byte, error) {
		if d, ok := docs[name]; ok {
			return []byte(d), nil
		}
		return nil, errors.New("not found")
	})
	for _, tc := range []struct {
		from, target string
		problem      string // "" when the link resolves
	}{
		{"README.md", "docs/deploy.md", ""},
		{"README.md", "docs/deploy.md#iam", ""},
		{"README.md", "docs/deploy.md#custom", ""},
		{"README.md", "#layout-1", ""},
		{"README.md", "#layout-2", "no heading"},
		{"README.md", "docs/deploy.md#not-a-heading", "no heading"},
		{"README.md", "docs/", ""},
		{"README.md", "infra", ""},
		{"README.md", "infra/x.go#L3", ""},
		{"docs/deploy.md", "../README.md#layout", ""},
		{"docs/deploy.md", "img.svg", ""},
		{"docs/deploy.md", "/infra/x.go", ""},
		{"docs/deploy.md", "deploy.md?plain=1#iam", ""},
		{"README.md", "docs/missing.md", "no such file"},
		{"README.md", "../shared/design/style.md", "outside the repository"},
		{"docs/deploy.md", "../../elsewhere.md", "outside the repository"},
		{"README.md", "https://example.com/x.md", ""},
		{"README.md", "mailto:ops@example.com", ""},
	} {
		got := repo.check(tc.from, tc.target)
		if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
			t.Errorf("check(%q, %q) = %q, want %q", tc.from, tc.target, got, tc.problem)
		}
	}
}
