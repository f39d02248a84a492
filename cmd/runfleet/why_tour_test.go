package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
)

// whyLine is `runfleet why`'s first line for ref.
func whyLine(t *testing.T, env map[string]string, ref string) string {
	t.Helper()
	res := runCLI(t, env, "why", ref)
	if res.code != exitOK {
		t.Fatalf("why %s: %+v", ref, res)
	}
	first, _, _ := strings.Cut(res.stdout, "\n")
	return first
}

// eventuallyWhy waits for why's first line to say every fact.
func eventuallyWhy(t *testing.T, env map[string]string, ref string, facts ...string) {
	t.Helper()
	var line string
	enginetest.Eventually(t, "why "+ref+" to say "+strings.Join(facts, "; "), func() bool {
		line = whyLine(t, env, ref)
		for _, f := range facts {
			if !strings.Contains(line, f) {
				return false
			}
		}
		return true
	}, func() string { return "last first line: " + line })
}

// TestTourWhyAndCountsThatAgree follows the README tour with runfleet why
// at each step, adds a job whose labels no pool has, and checks that jobs
// list, the status page, /metrics and the EMF gauges count the same
// waiting-for-capacity, open, unmatched and instance numbers — among them
// the case: a job whose previous runner is pending_delete at
// max_runners waits for capacity.
func TestTourWhyAndCountsThatAgree(t *testing.T) {
	srv, env := startTourServe(t)
	send := func(file string) {
		t.Helper()
		if res := runCLI(t, env, "webhook", "send", file); res.code != exitOK {
			t.Fatalf("webhook send %s: %+v", file, res)
		}
	}

	// 1-2: a job gets its runner, runs, completes.
	send(payload(t, "queued.json"))
	srv.waitStatus(t, linuxInstance, runner.StatusRunning)
	eventuallyWhy(t, env, "https://github.com/octo-org/hello-world/actions/runs/9100000001/job/7000000001", "Job 7000000001: runner "+linuxInstance)
	send(payload(t, "in_progress.json"))
	eventuallyWhy(t, env, "7000000001", "served by runner "+linuxInstance)
	send(payload(t, "completed.json"))
	eventuallyWhy(t, env, "7000000001", "completed (success)")

	// 4: the always-fails pool: each create fails, each instance is left
	// pending_delete (its delete fails too) holding a slot, so after two
	// the job waits for capacity at max_runners 2/2.
	send(payload(t, "queued-broken.json"))
	broken := runner.InstanceName("always-fails", 7000000002, 1)
	srv.waitStatus(t, broken+"-r2", runner.StatusPendingDelete)
	eventuallyWhy(t, env, "7000000002", "waits for capacity: pool always-fails at max_runners 2/2", "is pending_delete")

	// 5: a job whose labels no pool has (a typo: x46).
	send(payload(t, "queued-typo.json"))
	eventuallyWhy(t, env, "7000000009", "matches no pool", "no pool has x46", "nearest pool, linux-x64, lacks x46")
	eventuallyWhy(t, env, "7000000404", "no record of job 7000000404")

	// Every view counts alike: the CLI's totals, the status page's pool
	// rows, /metrics and EMF — read until one reading of all four agrees
	// (the broken pool's deletes keep retrying meanwhile).
	var last string
	enginetest.Eventually(t, "the CLI, the status page, /metrics and EMF to agree", func() bool {
		var ok bool
		ok, last = countsAgree(t, srv, env)
		return ok
	}, func() string { return last })
}

// countsAgree reads each view once and reports whether they say: 1 job
// waiting for capacity (always-fails), 1 open job there, 1 unmatched (by
// labels), and 2 live instances in always-fails.
func countsAgree(t *testing.T, srv *running, env map[string]string) (bool, string) {
	t.Helper()
	var problems []string
	check := func(view string, ok bool, got string) {
		if !ok {
			problems = append(problems, view+": "+got)
		}
	}
	res := runCLI(t, env, "jobs", "list")
	check("jobs list", res.code == exitOK && strings.Contains(res.stdout, "2 open jobs waiting for: 1 unmatched, 1 capacity;") &&
		strings.Contains(res.stdout, "7000000009#1") && strings.Contains(res.stdout, "unmatched: no pool has"), res.stdout)

	page := httpGet(t, srv.url+"/?token=dev-api-token")
	check("status page", strings.Contains(page, `data-pool="always-fails" data-live="2" data-max="2" data-waiting="1"`) &&
		strings.Contains(page, `data-job="7000000009#1" data-status="unmatched"`) &&
		regexp.MustCompile(`(?s)data-pool="always-fails"[^>]*>\s*<td>always-fails</td>.*?<td class="num open">1</td>`).MatchString(page), "pool and job rows")

	prom := httpGet(t, srv.url+"/metrics")
	for _, series := range []string{
		`runfleet_jobs_waiting_for_capacity{pool="always-fails"} 1`,
		`runfleet_jobs_unmatched{reason="labels"} 1`,
		`runfleet_pool_max_runners{pool="always-fails"} 2`,
	} {
		check("/metrics", strings.Contains(prom, series), series)
	}
	if n := sumSeries(prom, "runfleet_instances", "always-fails"); n != 2 {
		check("/metrics", false, fmt.Sprintf("%d live instances in always-fails", n))
	}
	if n := sumSeries(prom, "runfleet_open_jobs", "always-fails"); n != 1 {
		check("/metrics", false, fmt.Sprintf("%d open jobs in always-fails", n))
	}

	// EMF counts with the same function over the same records.
	c := srv.client(t)
	live, err := c.ListInstances(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.ListOpenJobs(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	open := make([]*runner.Job, 0, len(jobs))
	for _, j := range jobs {
		open = append(open, j.Job)
	}
	var emf bytes.Buffer
	e := metrics.NewEMF(&emf, "tour")
	e.Fleet(metrics.MeasureFleet([]metrics.PoolLimit{{Name: "always-fails", MaxRunners: 2}}, live, open, time.Now(), nil))
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	out := emf.String()
	check("EMF", regexp.MustCompile(`"pool":"always-fails"[^\n]*"runfleet_jobs_waiting_for_capacity":1\b|"runfleet_jobs_waiting_for_capacity":1\b[^\n]*"pool":"always-fails"`).MatchString(out) &&
		regexp.MustCompile(`"reason":"labels"[^\n]*"runfleet_jobs_unmatched":1\b|"runfleet_jobs_unmatched":1\b[^\n]*"reason":"labels"`).MatchString(out), out)
	return len(problems) == 0, strings.Join(problems, "\n")
}

// sumSeries sums a family's series for pool over its other label.
func sumSeries(prom, family, pool string) int {
	n := 0
	re := regexp.MustCompile(`(?m)^` + family + `\{(?:[a-z]+="[a-z_0-9]+",)?pool="` + regexp.QuoteMeta(pool) + `"(?:,[a-z]+="[a-z_0-9]+")?\} (\d+)$`)
	for _, m := range re.FindAllStringSubmatch(prom, -1) {
		var v int
		fmt.Sscan(m[1], &v)
		n += v
	}
	return n
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
