package lambdafn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/warm"
)

// warmConfig is testConfig with a queue-time target on the pool.
var warmConfig = strings.Replace(testConfig, "    max_runners: 50\n",
	"    max_runners: 50\n    warm:\n      target_queue_time: 10s\n      percentile: 90\n      max_idle: 5\n", 1)

// The scheduled reconciler sizes a pool with a queue-time target from the
// job ledger in DynamoDB, as serve does from bbolt or PostgreSQL: the last
// hour's bursts of three jobs (settled ones too) ask for three warm runners,
// and the pass creates them.
func TestScheduledReconcileSizesWarmPoolsFromDynamoDB(t *testing.T) {
	if !strings.Contains(warmConfig, "warm:") {
		t.Fatal("the test config no longer has the line the warm target is added after")
	}
	s := newStack(t, stackOptions{config: warmConfig})
	reconciler := s.reconciler()
	ctx := context.Background()
	now := time.Now()
	id := int64(7000003000)
	for burst := range 6 {
		at := now.Add(-time.Duration(50-8*burst) * time.Minute)
		for range 3 {
			id++
			job := createQueuedJob(t, s, id, at)
			closed, err := job.Transition(runner.JobClosed, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.store.UpdateJob(ctx, runner.JobOpen, closed); err != nil {
				t.Fatal(err)
			}
		}
	}

	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ictx, _ := s.invocation()
	report, err := reconciler(ictx, tick)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Warm) != 1 {
		t.Fatalf("report.Warm = %+v, want the pool's decision", report.Warm)
	}
	w := report.Warm[0]
	if w.Pool != linuxPool || w.Hot != 3 || w.ArrivedLastHour != 18 {
		t.Fatalf("warm decision %+v, want 3 hot runners for 18 jobs in bursts of 3 in the last hour", w)
	}
	if report.WarmCreated != 3 {
		t.Fatalf("report %+v, want 3 warm runners created", report)
	}
	if lines := s.logs.Lines(t, map[string]any{"msg": "the store cannot list the job ledger's arrivals; the pool keeps min_idle"}); len(lines) != 0 {
		t.Fatalf("the reconciler fell back to min_idle: %v", lines)
	}
}

// On DynamoDB as on bbolt, the scheduled reconciler keeps a pool's
// arrivals past the ledger's week: a pass after a day has ended writes the
// day's jobs per minute to the pool's cursor, and a second pass writes
// nothing more.
func TestScheduledReconcileKeepsArrivalsInDynamoDB(t *testing.T) {
	s := newStack(t, stackOptions{config: warmConfig})
	reconciler := s.reconciler()
	ctx := context.Background()
	now := time.Now()
	id := int64(7000004000)
	old := []time.Time{now.Add(-50 * time.Hour), now.Add(-50 * time.Hour), now.Add(-49 * time.Hour)}
	for _, at := range old {
		id++
		createQueuedJob(t, s, id, at)
	}
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	kept := func() (warm.Kept, int64) {
		t.Helper()
		ictx, _ := s.invocation()
		if _, err := reconciler(ictx, tick); err != nil {
			t.Fatal(err)
		}
		cur, err := s.store.GetCursor(ctx, "warm/arrivals/"+linuxPool)
		if err != nil {
			t.Fatal(err)
		}
		k, err := warm.DecodeKept(cur.Value)
		if err != nil {
			t.Fatal(err)
		}
		return k, cur.Version
	}
	k, version := kept()
	n := 0
	for _, c := range k.Counts {
		n += c
	}
	if version != 1 || n != len(old) || !k.Start.Equal(old[0].Truncate(time.Minute)) {
		t.Fatalf("kept %d jobs from %v (cursor version %d); want %d from %v, written once", n, k.Start, version, len(old), old[0].Truncate(time.Minute))
	}
	if _, again := kept(); again != version {
		t.Fatalf("a second pass wrote the kept arrivals again (version %d → %d)", version, again)
	}
}

// createQueuedJob writes an open job of the pool, queued at at, to the
// stack's table.
func createQueuedJob(t *testing.T, s *stack, id int64, at time.Time) *runner.Job {
	t.Helper()
	job := &runner.Job{
		ID: id, RunAttempt: 1, Pool: linuxPool, Owner: runner.Owner{Org: "octo-org"}, Repository: "octo-org/app",
		Labels: []string{"self-hosted", "linux", "x64"}, Status: runner.JobOpen,
		QueuedAt: at, CreatedAt: at, UpdatedAt: at, StatusChangedAt: at,
	}
	if err := s.store.CreateJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}
