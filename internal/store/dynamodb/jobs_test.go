package dynamodb

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

func TestJobRoundTripsAndVersions(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	job := testJob("p", 7)
	job.InstallationID = 99
	job.Instance = "runfleet-p-7-1"
	job.Made = 1
	job.RunnerName = "runner-a"
	job.CheckedMade = 1
	job.Conclusion = "cancelled"
	job.NextAttemptAt = job.QueuedAt.Add(time.Minute)
	job.Version = 42 // whatever the caller had, a new record starts at 1
	mustCreateJob(t, s, job)
	if job.Version != 1 {
		t.Fatalf("Version after create = %d, want 1", job.Version)
	}
	got, err := s.GetJob(ctx, job.Key())
	if err != nil {
		t.Fatal(err)
	}
	requireSameJob(t, job, got)

	next := mustMoveJob(t, s, got, runner.JobWaiting)
	if next.Version != 2 {
		t.Fatalf("Version after update = %d, want 2", next.Version)
	}
	got, err = s.GetJob(ctx, job.Key())
	if err != nil {
		t.Fatal(err)
	}
	requireSameJob(t, next, got)

	if _, err := s.GetJob(ctx, runner.JobKey(7, 2)); !errors.Is(err, store.ErrJobNotFound) {
		t.Fatalf("another run attempt: got %v, want ErrJobNotFound", err)
	}
}

func TestUpdateJobIsCompareAndSet(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	job := testJob("p", 1)
	mustCreateJob(t, s, job)

	illegal, _ := job.Transition(runner.JobServed, time.Now())
	illegal.Status = runner.JobOpen
	var bad *runner.IllegalTransitionError
	if err := s.UpdateJob(ctx, runner.JobClosed, illegal); !errors.As(err, &bad) {
		t.Fatalf("closed -> open: got %v, want an *IllegalTransitionError", err)
	}

	served := mustMoveJob(t, s, job, runner.JobServed)
	lost, _ := job.Transition(runner.JobWaiting, time.Now())
	var conflict *store.ConflictError
	if err := s.UpdateJob(ctx, runner.JobOpen, lost); !errors.As(err, &conflict) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write on a stale read: got %v, want a *ConflictError", err)
	}
	if conflict.Kind != store.KindJob || conflict.Key != job.Key() || conflict.ExpectedStatus != string(runner.JobOpen) || conflict.ExpectedVersion != 1 || lost.Version != 1 {
		t.Fatalf("conflict %+v (caller's Version %d) does not name the losing write", conflict, lost.Version)
	}
	gone := testJob("p", 2)
	gone.Version = 1
	if err := s.UpdateJob(ctx, runner.JobOpen, gone); !errors.As(err, &conflict) {
		t.Fatalf("update of a missing job: got %v, want a *ConflictError", err)
	}
	if got, _ := s.GetJob(ctx, job.Key()); got.Status != runner.JobServed || got.Version != served.Version {
		t.Fatalf("stored job %+v, want the served version", got)
	}
}

// A settled job keeps its record for store.DeletedRetention, then reads as
// absent and its key may be created again, TTL sweeper or not.
func TestSettledJobRetention(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	job := testJob("p", 1)
	mustCreateJob(t, s, job)
	before := time.Now()
	closed := mustMoveJob(t, s, job, runner.JobClosed)
	if closed.ExpiresAt.Before(before.Add(store.DeletedRetention)) || closed.ExpiresAt.After(time.Now().Add(store.DeletedRetention)) {
		t.Fatalf("ExpiresAt = %v, want now + DeletedRetention", closed.ExpiresAt)
	}
	if err := s.CreateJob(ctx, testJob("p", 1)); !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("create over a closed job in retention: got %v, want ErrJobExists", err)
	}

	s.now = func() time.Time { return closed.ExpiresAt.Add(time.Millisecond) }
	if got, err := s.GetJob(ctx, job.Key()); !errors.Is(err, store.ErrJobNotFound) {
		t.Fatalf("after retention: got %+v, %v; want ErrJobNotFound", got, err)
	}
	again := testJob("p", 1)
	mustCreateJob(t, s, again)
	if got, err := s.GetJob(ctx, job.Key()); err != nil || got.Status != runner.JobOpen || got.Version != 1 {
		t.Fatalf("re-created job: %+v, %v", got, err)
	}

	// An open job never expires, whatever ExpiresAt a writer left on it.
	open := testJob("p", 2)
	open.ExpiresAt = time.Now().Add(-time.Hour)
	mustCreateJob(t, s, open)
	if _, err := s.GetJob(ctx, open.Key()); err != nil {
		t.Fatalf("open job with a past ExpiresAt: %v", err)
	}
	if err := s.CreateJob(ctx, testJob("p", 2)); !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("create over an open job with a past ExpiresAt: got %v, want ErrJobExists", err)
	}
}

// ListOpenJobs merges every shard oldest first, includes waiting jobs,
// leaves settled ones out, and reads every page.
func TestListOpenJobsOldestFirst(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	s.pageSize = 3
	base := time.Now().Truncate(time.Millisecond).Add(-time.Hour)

	var want []string
	const jobs = 60
	for i := range int64(jobs) {
		// Queued in an order unrelated to the ids (and so to the shards).
		j := testJob("p", 1000+i)
		j.QueuedAt = base.Add(time.Duration((i*37)%jobs) * time.Second)
		mustCreateJob(t, s, j)
		switch i % 5 {
		case 0:
			mustMoveJob(t, s, j, runner.JobServed)
			continue
		case 1:
			j = mustMoveJob(t, s, j, runner.JobWaiting)
		}
		want = append(want, j.Key())
	}
	zero := testJob("p", 5000) // a writer that did not know when: sorts first
	zero.QueuedAt = time.Time{}
	mustCreateJob(t, s, zero)
	want = append([]string{zero.Key()}, want...)

	got, err := s.ListOpenJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].QueuedAt.Before(got[i-1].QueuedAt) {
			t.Fatalf("not oldest first at %d: %v after %v", i, got[i].QueuedAt, got[i-1].QueuedAt)
		}
	}
	keys := make([]string, len(got))
	for i, j := range got {
		keys[i] = j.Key()
	}
	if got[0].Key() != zero.Key() {
		t.Fatalf("first listed %s, want the job without QueuedAt", got[0].Key())
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("ListOpenJobs = %v\nwant %v", keys, want)
	}
}

func requireSameJob(t *testing.T, want, got *runner.Job) {
	t.Helper()
	if !reflect.DeepEqual(normalJob(want), normalJob(got)) {
		t.Fatalf("stored job differs:\n got %+v\nwant %+v", got, want)
	}
}

// normalJob drops time zones (the store keeps UTC instants).
func normalJob(j *runner.Job) runner.Job {
	out := *j.Clone()
	for _, tm := range []*time.Time{&out.NextAttemptAt, &out.QueuedAt, &out.CreatedAt, &out.UpdatedAt, &out.StatusChangedAt, &out.ExpiresAt} {
		if !tm.IsZero() {
			*tm = tm.UTC()
		}
	}
	return out
}
