package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var openJobTests = []contractTest{
	{"OpenJobs/EmptyStoreListsNothing", openJobsEmptyStoreListsNothing},
	{"OpenJobs/OldestFirst", openJobsOldestFirst},
	{"OpenJobs/OnlyUnsettled", openJobsOnlyUnsettled},
	{"OpenJobs/UnmatchedListedUntilSettled", openJobsUnmatchedListedUntilSettled},
}

func listOpenJobs(t *testing.T, s store.Store) []*runner.Job {
	t.Helper()
	open, err := s.ListOpenJobs(context.Background())
	if err != nil {
		t.Fatalf("ListOpenJobs: %v", err)
	}
	return open
}

func requireOpenJobs(t *testing.T, s store.Store, want ...string) []*runner.Job {
	t.Helper()
	open := listOpenJobs(t, s)
	if got := jobKeys(open); !slices.Equal(got, want) {
		t.Fatalf("ListOpenJobs = %v, want %v (in this order)", got, want)
	}
	return open
}

func openJobsEmptyStoreListsNothing(t *testing.T, s store.Store) {
	requireOpenJobs(t, s)
}

// The longest-waiting job comes first, whatever order the jobs were
// recorded in.
func openJobsOldestFirst(t *testing.T, s store.Store) {
	base := now().Add(-time.Hour)
	queuedAfter := map[int64]time.Duration{ // job id -> QueuedAt offset
		1: 5 * time.Minute,
		2: time.Minute,
		3: 3 * time.Minute,
		4: 2 * time.Minute,
		5: 4 * time.Minute,
		6: 90 * time.Second,
	}
	for _, id := range []int64{1, 2, 3, 4, 5, 6} {
		j := newJob("p", id)
		j.QueuedAt = base.Add(queuedAfter[id])
		mustCreateJob(t, s, j)
	}
	wantOrder := []int64{2, 6, 4, 3, 5, 1}
	want := make([]string, len(wantOrder))
	for i, id := range wantOrder {
		want[i] = runner.JobKey(id, 1)
	}
	open := requireOpenJobs(t, s, want...)
	for _, j := range open {
		requireSameJob(t, mustGetJob(t, s, j.Key()), j)
	}
}

// Only open and waiting jobs are listed, each once, as stored now; served,
// closed and expired ones are history.
func openJobsOnlyUnsettled(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := now().Add(-time.Hour)
	job := func(id int64) *runner.Job {
		j := newJob("p", id)
		j.QueuedAt = base.Add(time.Duration(id) * time.Minute)
		mustCreateJob(t, s, j)
		return j
	}
	open, waiting, reopened, admitted := job(1), job(2), job(3), job(4)
	served, closed, expired, servedThenClosed := job(5), job(6), job(7), job(8)
	_ = open

	mustMoveJob(t, s, waiting.Key(), runner.JobWaiting)
	mustMoveJob(t, s, reopened.Key(), runner.JobWaiting, runner.JobOpen)
	inst, next := nextInstanceFor(admitted)
	if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}); err != nil {
		t.Fatal(err)
	}
	mustMoveJob(t, s, served.Key(), runner.JobServed)
	mustMoveJob(t, s, closed.Key(), runner.JobClosed)
	mustMoveJob(t, s, expired.Key(), runner.JobExpired)
	mustMoveJob(t, s, servedThenClosed.Key(), runner.JobServed, runner.JobClosed)

	list := requireOpenJobs(t, s, open.Key(), waiting.Key(), reopened.Key(), admitted.Key())
	for _, j := range list {
		requireSameJob(t, mustGetJob(t, s, j.Key()), j)
	}
	if got := list[3]; got.Instance != inst.Name || got.Made != 1 || got.Version != 2 {
		t.Fatalf("listed admitted job: instance %q, made %d, version %d; want its admitted version", got.Instance, got.Made, got.Version)
	}
	if list[1].Status != runner.JobWaiting {
		t.Fatalf("listed waiting job has status %s", list[1].Status)
	}

	// Settling the rest empties the list.
	mustMoveJob(t, s, open.Key(), runner.JobServed)
	mustMoveJob(t, s, waiting.Key(), runner.JobClosed)
	mustMoveJob(t, s, reopened.Key(), runner.JobExpired)
	mustMoveJob(t, s, admitted.Key(), runner.JobServed)
	requireOpenJobs(t, s)
}

// A job no pool matched is recorded without a pool, listed with the open
// demand (with its reason, as written) while GitHub may still hold it,
// opened when a pool matches later, and, once settled, leaves the list
// and gets the retention of every settled job.
func openJobsUnmatchedListedUntilSettled(t *testing.T, s store.Store) {
	ctx := context.Background()
	unmatched := func(id int64) *runner.Job {
		j := newJob("", id)
		j.Status = runner.JobUnmatched
		j.UnmatchedReason = "labels"
		j.UnmatchedDetail = "no pool has the label gpu"
		j.Delivery, j.DeliverySource = "d-1", "webhook"
		j.QueuedAt = now().Add(time.Duration(id) * time.Minute)
		mustCreateJob(t, s, j)
		return j
	}
	stays, fixed, expires := unmatched(1), unmatched(2), unmatched(3)
	list := requireOpenJobs(t, s, stays.Key(), fixed.Key(), expires.Key())
	requireSameJob(t, stays, list[0])

	next := mustGetJob(t, s, fixed.Key())
	reopened, err := next.Transition(runner.JobOpen, now())
	if err != nil {
		t.Fatal(err)
	}
	reopened.Pool = "p"
	if err := s.UpdateJob(ctx, runner.JobUnmatched, reopened); err != nil {
		t.Fatalf("UpdateJob(unmatched -> open): %v", err)
	}
	mustMoveJob(t, s, expires.Key(), runner.JobExpired)
	list = requireOpenJobs(t, s, stays.Key(), fixed.Key())
	if list[1].Status != runner.JobOpen || list[1].Pool != "p" {
		t.Fatalf("reopened job: status %s pool %q, want open in p", list[1].Status, list[1].Pool)
	}
	if got := mustGetJob(t, s, expires.Key()); got.ExpiresAt.IsZero() {
		t.Fatal("an unmatched job that expired has no retention set")
	}
}
