package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
)

// TestStatusPageShowsAnUnmatchedJobInChromium: a job whose labels no pool
// has (a typo) is on the status page in a real browser, with the reason,
// and its row's link opens the job's why page, which answers first.
func TestStatusPageShowsAnUnmatchedJobInChromium(t *testing.T) {
	browser := findChromium(t)
	srv := startServe(t, t.TempDir(), false)
	env := srv.cliEnv()

	if res := runCLI(t, env, "webhook", "send", payload(t, "queued-typo.json")); res.code != exitOK {
		t.Fatalf("webhook send: %+v", res)
	}
	enginetest.Eventually(t, "the unmatched job in jobs list", func() bool {
		res := runCLI(t, env, "jobs", "list")
		return res.code == exitOK && strings.Contains(res.stdout, "7000000009#1") && strings.Contains(res.stdout, "1 unmatched")
	})

	token := "?token=" + url.QueryEscape(testAPIToken)
	dom := browser.dumpDOM(t, srv.url+"/"+token)
	for what, pattern := range map[string]string{
		"the job, unmatched":       `data-job="7000000009#1" data-status="unmatched"`,
		"the reason in words":      "no pool has x46",
		"the nearest pool":         "the nearest pool, linux-x64, lacks x46",
		"the link to its why page": `href="why/7000000009` + token + `"`,
	} {
		if !strings.Contains(dom, strings.ReplaceAll(pattern, "&", "&amp;")) {
			t.Errorf("the page does not show %s (%s)", what, pattern)
		}
	}
	why := browser.dumpDOM(t, srv.url+"/why/7000000009"+token)
	if !strings.Contains(why, `data-reason="unmatched"`) || !strings.Contains(why, "Job 7000000009: matches no pool") {
		t.Errorf("the why page:\n%s", why)
	}
	shot := filepath.Join(testOutputDir(t), "statuspage-unmatched.png")
	browser.screenshot(t, srv.url+"/"+token, shot)
	t.Logf("status page screenshot: %s", shot)
}
