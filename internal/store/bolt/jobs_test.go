package bolt_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
)

func openJob(pool string, id int64, queuedAt time.Time) *runner.Job {
	return &runner.Job{
		ID: id, RunAttempt: 1, Pool: pool, Owner: runner.Owner{Org: "octo-org"}, Status: runner.JobOpen,
		QueuedAt: queuedAt, CreatedAt: queuedAt, UpdatedAt: queuedAt, StatusChangedAt: queuedAt,
	}
}

func moveJob(t *testing.T, s store.Store, j *runner.Job, statuses ...runner.JobStatus) *runner.Job {
	t.Helper()
	for _, to := range statuses {
		next, err := j.Transition(to, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateJob(context.Background(), j.Status, next); err != nil {
			t.Fatalf("%s: %s -> %s: %v", j.Key(), j.Status, to, err)
		}
		j = next
	}
	return j
}

// The open index keeps QueuedAt's full precision, and breaks ties by job
// key, so the order is the same on every run (the simulation relies on
// it), whatever order the jobs were written in.
func TestListOpenJobsOrderIsExactAndDeterministic(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, j := range []*runner.Job{
		openJob("p", 30, base.Add(2*time.Microsecond)), // same millisecond as 20, later
		openJob("p", 20, base.Add(time.Microsecond)),
		openJob("p", 12, base), // ties with 11: "11#1" < "12#1"
		openJob("p", 11, base),
		openJob("p", 40, time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)), // before the epoch
		openJob("p", 50, time.Time{}),                                      // never set: first of all
	} {
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListOpenJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range list {
		got = append(got, j.Key())
	}
	want := []string{"50#1", "40#1", "11#1", "12#1", "20#1", "30#1"}
	if !slices.Equal(got, want) {
		t.Fatalf("ListOpenJobs = %v, want %v", got, want)
	}
}

// A job key re-created after its settled record expired (but before a
// purge) must not be removed by the purge that was due for the old record.
func TestPurgeSparesRecreatedJob(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, bolt.WithClock(clock.Now))

	first := openJob("p", 1, clock.Now())
	if err := s.CreateJob(ctx, first); err != nil {
		t.Fatal(err)
	}
	moveJob(t, s, first, runner.JobClosed)
	clock.Advance(store.DeletedRetention + time.Minute)

	second := openJob("p", 1, clock.Now())
	if err := s.CreateJob(ctx, second); err != nil {
		t.Fatalf("re-create over expired job: %v", err)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("PurgeExpired = %d, %v; want 0", n, err)
	}
	got, err := s.GetJob(ctx, second.Key())
	if err != nil || got.Status != runner.JobOpen || got.Version != 1 {
		t.Fatalf("re-created job: %+v, %v", got, err)
	}
}
