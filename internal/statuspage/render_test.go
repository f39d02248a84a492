package statuspage

import (
	"bytes"
	"strings"
	"testing"
)

// Text that comes from outside (a provider's fault, a repository, labels)
// is shown as text, never as markup: the page is rendered without a
// template engine, so this is the escaping's test.
func TestRenderEscapesWhatItDidNotWrite(t *testing.T) {
	hostile := `<script>alert(1)</script>" onmouseover="x`
	v := &view{
		GeneratedAt: "now",
		Pools:       []poolRow{{Name: hostile, Live: 1, Max: 2}},
		Instances:   []instanceRow{{Name: hostile, Pool: hostile, Status: "error", Fault: hostile}},
		Jobs:        []jobRow{{Key: "1#1", Repository: hostile, Labels: hostile}},
		Transitions: []transitionRow{{Instance: hostile, From: "creating", To: "error", Fault: hostile}},
		Chart:       chart{Width: 100, Height: 50, Points: []chartPoint{{Stage: "started", Title: hostile}}},
	}
	var b bytes.Buffer
	render(&b, v, "body{}", 5)
	page := b.String()
	if strings.Contains(page, "<script") || strings.Contains(page, `" onmouseover=`) {
		t.Fatalf("hostile text reached the page as markup:\n%s", page)
	}
	if n := strings.Count(page, "&lt;script&gt;alert(1)&lt;/script&gt;&#34; onmouseover=&#34;x"); n < 8 {
		t.Errorf("hostile text shown escaped %d times, want every place it appears (≥ 8)", n)
	}
}
