package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/statuspage"
	"github.com/runfleet/runfleet/internal/store"
)

// waitCase is one reason a job waits, and the records that make it so.
type waitCase struct {
	want runner.JobWait
	// maxRunners is the pool's limit (default 10).
	maxRunners int
	// write stores job (and whatever else the case needs); job is open,
	// of the pool, queued a minute ago, with nothing made for it yet.
	write func(t *testing.T, st store.Store, job *runner.Job, later time.Time)
}

// TestJobsListWhyStatusPageAndMetricsAgreeOnEachReason: for every reason
// a job can wait for, the records that give it, read through the four
// views an operator has — jobs list, runfleet why, the status page and
// /metrics — each naming the reason with the same word. Before
// runner.WaitOf was the one definition, jobs list and the gauges said
// "capacity" for a job runfleet why said was backing off (the README
// tour's job 7000000002).
func TestJobsListWhyStatusPageAndMetricsAgreeOnEachReason(t *testing.T) {
	createJob := func(t *testing.T, st store.Store, job *runner.Job) {
		t.Helper()
		if err := st.CreateJob(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	// covered stores job with its first instance, made by adjust.
	covered := func(status runner.Status, adjust func(in *runner.Instance, later time.Time)) func(*testing.T, store.Store, *runner.Job, time.Time) {
		return func(t *testing.T, st store.Store, job *runner.Job, later time.Time) {
			job.Made, job.Instance = 1, job.InstanceFor(1)
			in := &runner.Instance{Name: job.Instance, Pool: job.Pool, Status: status, RunnerStatus: runner.RunnerPending,
				JobID: job.ID, RunAttempt: job.RunAttempt, Owner: job.Owner, Labels: job.Labels,
				CreatedAt: job.QueuedAt, UpdatedAt: job.QueuedAt, StatusChangedAt: job.QueuedAt}
			if adjust != nil {
				adjust(in, later)
			}
			if err := st.CreateInstance(context.Background(), store.Admission{Instance: in, MaxRunners: 10, Job: job}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []waitCase{
		{want: runner.WaitApproval, write: func(t *testing.T, st store.Store, job *runner.Job, _ time.Time) {
			job.Status = runner.JobWaiting
			createJob(t, st, job)
		}},
		{want: runner.WaitUnmatched, write: func(t *testing.T, st store.Store, job *runner.Job, _ time.Time) {
			job.Status, job.Pool = runner.JobUnmatched, ""
			job.UnmatchedReason, job.UnmatchedDetail = runner.UnmatchedLabels, "no pool has the label x46"
			createJob(t, st, job)
		}},
		{want: runner.WaitPoolGone, write: func(t *testing.T, st store.Store, job *runner.Job, _ time.Time) {
			job.Pool = "gone"
			createJob(t, st, job)
		}},
		// The pool's one slot is held by a warm runner.
		{want: runner.WaitCapacity, maxRunners: 1, write: func(t *testing.T, st store.Store, job *runner.Job, _ time.Time) {
			warm := &runner.Instance{Name: runner.WarmInstanceName(job.Pool, "a1"), Pool: job.Pool, Status: runner.StatusRunning,
				RunnerStatus: runner.RunnerIdle, CreatedAt: job.QueuedAt, UpdatedAt: job.QueuedAt, StatusChangedAt: job.QueuedAt}
			if err := st.CreateInstance(context.Background(), store.Admission{Instance: warm, MaxRunners: 1}); err != nil {
				t.Fatal(err)
			}
			createJob(t, st, job)
		}},
		// The README tour's job 7000000002: room in the pool, the next
		// runner not before its backoff ends.
		{want: runner.WaitBackoff, write: func(t *testing.T, st store.Store, job *runner.Job, later time.Time) {
			job.Made, job.NextAttemptAt = 1, later
			createJob(t, st, job)
		}},
		{want: runner.WaitNextRunner, write: func(t *testing.T, st store.Store, job *runner.Job, _ time.Time) {
			createJob(t, st, job)
		}},
		{want: runner.WaitGitHubBudget, write: covered(runner.StatusPendingCreate, func(in *runner.Instance, later time.Time) {
			in.WaitingForGitHub, in.NextAttemptAt = later, later
		})},
		{want: runner.WaitCreateBackoff, write: covered(runner.StatusPendingCreate, func(in *runner.Instance, later time.Time) {
			in.Attempts, in.NextAttemptAt, in.ProviderFault = 2, later, "InsufficientInstanceCapacity"
		})},
		{want: runner.WaitCreating, write: covered(runner.StatusCreating, nil)},
		{want: runner.WaitBooting, write: covered(runner.StatusRunning, func(in *runner.Instance, _ time.Time) {
			in.RunnerStatus = runner.RunnerInstalling
		})},
		{want: runner.WaitOnline, write: covered(runner.StatusRunning, func(in *runner.Instance, _ time.Time) {
			in.RunnerStatus = runner.RunnerIdle
		})},
	}
	if len(cases) != len(runner.JobWaits) {
		t.Fatalf("%d cases for the %d reasons of runner.JobWaits: give every reason a case", len(cases), len(runner.JobWaits))
	}
	for i, c := range cases {
		t.Run(string(c.want), func(t *testing.T) {
			id := int64(7100000001 + i)
			key := runner.JobKey(id, 1)
			v := readViews(t, c, id)
			if v.listed != c.want || !strings.Contains(v.listRow, "  "+string(c.want)) || !strings.Contains(v.listTotals, "1 "+string(c.want)) {
				t.Errorf("jobs list: %s, row %q, totals %q; want %s", v.listed, v.listRow, v.listTotals, c.want)
			}
			if v.why != string(c.want) {
				t.Errorf("why %d: reason %s, want %s", id, v.why, c.want)
			}
			if want := fmt.Sprintf(`data-job="%s" data-status="%s" data-wait="%s"`, key, v.status, c.want); !strings.Contains(v.page, want) {
				t.Errorf("the status page lacks %s", want)
			}
			for reason, n := range v.gauges {
				if want := boolInt(reason == string(c.want)); n != want {
					t.Errorf("/metrics: %s is %d, want %d", reason, n, want)
				}
			}
			if capacity := v.gauges[string(runner.WaitCapacity)]; v.waitingForCapacity != capacity {
				t.Errorf("/metrics: runfleet_jobs_waiting_for_capacity %d, but runfleet_jobs_waiting{reason=capacity} %d", v.waitingForCapacity, capacity)
			}
		})
	}
}

// views is what each view says of the one job of a waitCase.
type views struct {
	listed              runner.JobWait
	listRow, listTotals string
	why                 string
	status              runner.JobStatus
	page                string
	// gauges sums runfleet_jobs_waiting over pools by reason, and
	// runfleet_jobs_unmatched as reason unmatched.
	gauges             map[string]int
	waitingForCapacity int
}

// readViews writes c's records for job id into a fresh store and reads
// them through the operator API (jobs list and why, by the CLI), the
// status page and /metrics, all served from that store as serve does.
func readViews(t *testing.T, c waitCase, id int64) views {
	t.Helper()
	limit := c.maxRunners
	if limit == 0 {
		limit = 10
	}
	w := enginetest.NewWorld(t, enginetest.Options{Pools: enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = limit })})
	now := time.Now()
	job := &runner.Job{ID: id, RunAttempt: 1, RunID: id * 10, Pool: enginetest.Pool, Owner: runner.Owner{Org: enginetest.Owner},
		Repository: enginetest.Repository, Labels: enginetest.Labels(), Status: runner.JobOpen, QueuedAt: now.Add(-time.Minute),
		CreatedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute), StatusChangedAt: now.Add(-time.Minute)}
	// An hour ahead: every view reads its own clock a moment apart.
	c.write(t, w.Store, job, now.Add(time.Hour))

	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: w.Engine, Token: testAPIToken}))
	page := statuspage.New(statuspage.Options{Source: w.Engine, Token: testAPIToken})
	mux.Handle("/{$}", page)
	rec := promexport.New([]string{enginetest.Pool}, promexport.State{Store: w.Store, MaxRunners: map[string]int{enginetest.Pool: limit}})
	mux.Handle("/metrics", rec.Handler(nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	env := map[string]string{"RUNFLEET_SERVER": srv.URL, "RUNFLEET_API_TOKEN": testAPIToken}

	var v views
	res := runCLI(t, env, "jobs", "list", "-o", "json")
	var listed []httpapi.Job
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &listed) != nil || len(listed) != 1 {
		t.Fatalf("jobs list -o json: %+v", res)
	}
	v.listed, v.status = listed[0].Wait, listed[0].Status
	res = runCLI(t, env, "jobs", "list")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if res.code != exitOK || len(lines) != 3 {
		t.Fatalf("jobs list: %+v", res)
	}
	v.listRow, v.listTotals = lines[1], lines[2]

	res = runCLI(t, env, "why", "-o", "json", strconv.FormatInt(id, 10))
	var tl engine.Timeline
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &tl) != nil {
		t.Fatalf("why -o json: %+v", res)
	}
	v.why = tl.Answer.Reason

	v.page = httpGet(t, srv.URL+"/?token="+testAPIToken)
	prom := httpGet(t, srv.URL+"/metrics")
	v.gauges = map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^runfleet_jobs_waiting\{pool="[^"]*",reason="([a-z_]+)"\} (\d+)$`).FindAllStringSubmatch(prom, -1) {
		n, _ := strconv.Atoi(m[2])
		v.gauges[m[1]] += n
	}
	for _, m := range regexp.MustCompile(`(?m)^runfleet_jobs_unmatched\{reason="[a-z_]+"\} (\d+)$`).FindAllStringSubmatch(prom, -1) {
		n, _ := strconv.Atoi(m[1])
		v.gauges[string(runner.WaitUnmatched)] += n
	}
	if len(v.gauges) != len(runner.JobWaits) {
		t.Fatalf("/metrics has %d of the %d reasons:\n%s", len(v.gauges), len(runner.JobWaits), prom)
	}
	for _, m := range regexp.MustCompile(`(?m)^runfleet_jobs_waiting_for_capacity\{pool="[^"]*"\} (\d+)$`).FindAllStringSubmatch(prom, -1) {
		n, _ := strconv.Atoi(m[1])
		v.waitingForCapacity += n
	}
	return v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
