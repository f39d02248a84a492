package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

const secondLinuxJob = "7000000003"

// TestStatusPageInHeadlessChromium loads the status page of a running
// serve in a real browser after signed webhooks: two jobs queued, one of
// them in progress. It asserts what the rendered page shows and leaves a
// screenshot in the test output directory.
func TestStatusPageInHeadlessChromium(t *testing.T) {
	browser := findChromium(t)
	srv := startServe(t, t.TempDir(), false)
	env := srv.cliEnv()

	for _, p := range []string{payload(t, "queued.json"), withJobID(t, "queued.json", secondLinuxJob)} {
		if res := runCLI(t, env, "webhook", "send", p); res.code != exitOK {
			t.Fatalf("webhook send %s: %+v", p, res)
		}
	}
	second := runner.InstanceName("linux-x64", 7000000003, 1)
	srv.waitStatus(t, linuxInstance, runner.StatusRunning)
	srv.waitStatus(t, second, runner.StatusRunning)
	if res := runCLI(t, env, "webhook", "send", payload(t, "in_progress.json")); res.code != exitOK {
		t.Fatalf("webhook send in_progress: %+v", res)
	}
	// The page reads the store; wait until the first job is served there,
	// so what the browser sees is settled.
	enginetest.Eventually(t, "job 7000000001 to leave the open jobs", func() bool {
		res := runCLI(t, env, "jobs", "list", "-o", "json")
		return res.code == exitOK && !strings.Contains(res.stdout, `"id": 7000000001`)
	})

	pageURL := srv.url + "/?token=" + url.QueryEscape(testAPIToken)
	dom := browser.dumpDOM(t, pageURL)
	if !strings.Contains(dom, "<h1>runfleet</h1>") {
		t.Fatalf("chromium did not render the status page:\n%s", dom)
	}
	for what, pattern := range map[string]string{
		"the linux-x64 pool with 2 live of 10, none waiting": `data-pool="linux-x64" data-live="2" data-max="10" data-waiting="0"`,
		"the always-fails pool, empty":                       `data-pool="always-fails" data-live="0" data-max="2"`,
		"the first instance running":                         `data-instance="` + linuxInstance + `" data-status="running"`,
		"the second instance running":                        `data-instance="` + second + `" data-status="running"`,
		"the running count":                                  `data-status="running">running: 2<`,
		"the second job open":                                `data-job="` + secondLinuxJob + `#1" data-status="open"`,
		"a transition to running":                            `data-instance="` + linuxInstance + `" data-from="creating" data-to="running"`,
		"the queue-time chart":                               `<svg class="chart" id="queue-time-chart"`,
		"the started job's queue time":                       `data-stage="started" data-count="1"`,
		"both jobs' queue times to a machine":                `data-stage="created" data-count="2"`,
		"the started job's point on the chart":               `<circle class="point stage-started"`,
		"the pools' cost, nothing deleted yet":               `data-cost-usd="0.000000" data-cost-unknown="0"`,
		"the cost column":                                    `<td class="num cost">$0.00</td>`,
	} {
		if !strings.Contains(dom, pattern) {
			t.Errorf("the page does not show %s (%s)", what, pattern)
		}
	}
	if strings.Contains(dom, `data-job="7000000001#1"`) {
		t.Error("the page lists job 7000000001 as open after it started")
	}
	// Without the token the browser gets the refusal, not the fleet.
	if refused := browser.dumpDOM(t, srv.url+"/"); strings.Contains(refused, "data-pool") || !strings.Contains(refused, "missing token") {
		t.Errorf("the page without a token:\n%s", refused)
	}

	// The page is at / only, and only for reading.
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/?token=" + url.QueryEscape(testAPIToken), http.StatusMethodNotAllowed},
		{http.MethodGet, "/nope?token=" + url.QueryEscape(testAPIToken), http.StatusNotFound},
		{http.MethodHead, "/?token=" + url.QueryEscape(testAPIToken), http.StatusOK},
	} {
		req, err := http.NewRequest(c.method, srv.url+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}

	shot := filepath.Join(testOutputDir(t), "statuspage.png")
	browser.screenshot(t, pageURL, shot)
	t.Logf("status page screenshot: %s", shot)
}

// withJobID writes the example payload name as the delivery of another
// job, id, and returns the file's path.
func withJobID(t *testing.T, name, id string) string {
	t.Helper()
	data, err := os.ReadFile(payload(t, name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // ids are beyond float64's exact integers in print
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["workflow_job"].(map[string]any)["id"] = json.Number(id)
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), id+"-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
