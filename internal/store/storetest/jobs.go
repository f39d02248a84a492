package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var jobTests = []contractTest{
	{"Job/RoundTripsEveryField", jobRoundTripsEveryField},
	{"Job/CreateSetsVersionOne", jobCreateSetsVersionOne},
	{"Job/DuplicateIsJobExists", jobDuplicateIsJobExists},
	{"Job/GetMissingIsNotFound", jobGetMissingIsNotFound},
	{"Job/SettledGetsExpiry", jobSettledGetsExpiry},
	{"Job/ExpiredIsAbsentAndKeyReusable", jobExpiredIsAbsentAndKeyReusable},
	{"Job/InvalidRefused", jobInvalidRefused},
	{"Job/CanceledContextWritesNothing", jobCanceledContextWritesNothing},
}

func jobRoundTripsEveryField(t *testing.T, s store.Store) {
	want := fullJob("roundtrip")
	requireEveryFieldSet(t, want)
	mustCreateJob(t, s, want)
	requireSameJob(t, want, mustGetJob(t, s, want.Key()))

	// The same through an update, which rewrites the whole record.
	next, err := want.Transition(runner.JobWaiting, want.UpdatedAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	next.Instance = ""
	next.Labels = nil
	next.Conclusion = ""
	next.NextAttemptAt = time.Time{}
	next.ExpiresAt = time.Time{}
	if err := s.UpdateJob(context.Background(), want.Status, next); err != nil {
		t.Fatalf("UpdateJob: %v", err)
	}
	got := mustGetJob(t, s, want.Key())
	requireSameJob(t, next, got)
	if !got.NextAttemptAt.IsZero() || !got.ExpiresAt.IsZero() {
		t.Fatalf("cleared times came back set: next_attempt_at=%v expires_at=%v", got.NextAttemptAt, got.ExpiresAt)
	}
}

func jobCreateSetsVersionOne(t *testing.T, s store.Store) {
	j := newJob("p", 1)
	j.Version = 42 // whatever the caller had, a new record starts at 1
	mustCreateJob(t, s, j)
	if j.Version != 1 {
		t.Fatalf("caller's Version = %d after create, want 1", j.Version)
	}
	if got := mustGetJob(t, s, j.Key()); got.Version != 1 {
		t.Fatalf("stored Version = %d, want 1", got.Version)
	}
}

// A redelivered (or concurrently delivered) queued event finds the job
// recorded and records nothing; another run attempt is another job.
func jobDuplicateIsJobExists(t *testing.T, s store.Store) {
	first := newJob("p", 1)
	mustCreateJob(t, s, first)

	again := newJob("p", 1)
	again.Owner = runner.Owner{Org: "someone-else"}
	err := s.CreateJob(context.Background(), again)
	if !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("second CreateJob: got %v, want ErrJobExists", err)
	}
	if again.Version != 0 {
		t.Fatalf("failed create changed the caller's Version to %d", again.Version)
	}
	requireSameJob(t, first, mustGetJob(t, s, first.Key()))

	// Even once settled, the record blocks the key until its retention is over.
	mustMoveJob(t, s, first.Key(), runner.JobClosed)
	if err := s.CreateJob(context.Background(), newJob("p", 1)); !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("CreateJob over a closed job: got %v, want ErrJobExists", err)
	}

	rerun := newJob("p", 1)
	rerun.RunAttempt = 2
	mustCreateJob(t, s, rerun)
	if rerun.Key() == first.Key() {
		t.Fatalf("run attempts 1 and 2 share key %s", rerun.Key())
	}
	requireSameJob(t, rerun, mustGetJob(t, s, rerun.Key()))
}

func jobGetMissingIsNotFound(t *testing.T, s store.Store) {
	requireJobNotFound(t, s, runner.JobKey(404, 1))
}

// A settled job (served, closed, expired or owed a re-run) is kept DeletedRetention when
// its writer set no expiry, as long as a late event about it may come.
func jobSettledGetsExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, path := range [][]runner.JobStatus{
		{runner.JobServed},
		{runner.JobClosed},
		{runner.JobExpired},
		{runner.JobWaiting, runner.JobClosed},
		{runner.JobServed, runner.JobRerun},
		{runner.JobServed, runner.JobRerun, runner.JobRerun, runner.JobClosed},
	} {
		j := newJob("p", int64(100+i))
		mustCreateJob(t, s, j)
		before := time.Now()
		done := mustMoveJob(t, s, j.Key(), path...)
		after := time.Now()
		got := mustGetJob(t, s, j.Key())
		lo := before.Add(store.DeletedRetention).Add(-time.Second)
		hi := after.Add(store.DeletedRetention).Add(time.Second)
		if got.ExpiresAt.Before(lo) || got.ExpiresAt.After(hi) {
			t.Fatalf("%v: ExpiresAt = %v, want now + %v", path, got.ExpiresAt, store.DeletedRetention)
		}
		if !done.ExpiresAt.Equal(got.ExpiresAt) {
			t.Fatalf("%v: caller's ExpiresAt %v differs from stored %v", path, done.ExpiresAt, got.ExpiresAt)
		}
	}

	// The writer chose one: kept as written, also through a later write.
	j := newJob("p", 200)
	mustCreateJob(t, s, j)
	next, _ := j.Transition(runner.JobServed, now())
	next.ExpiresAt = now().Add(3 * 24 * time.Hour)
	if err := s.UpdateJob(ctx, runner.JobOpen, next); err != nil {
		t.Fatal(err)
	}
	requireSameJob(t, next, mustGetJob(t, s, j.Key()))
	closed := mustMoveJob(t, s, j.Key(), runner.JobClosed)
	if !closed.ExpiresAt.Equal(next.ExpiresAt) {
		t.Fatalf("closing a served job moved its ExpiresAt from %v to %v", next.ExpiresAt, closed.ExpiresAt)
	}
}

// A settled job whose retention is over is absent even if the store has
// not removed it yet (DynamoDB's TTL deletes lazily), and its key is free.
func jobExpiredIsAbsentAndKeyReusable(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := newJob("p", 1)
	mustCreateJob(t, s, old)
	gone, _ := old.Transition(runner.JobClosed, now())
	gone.ExpiresAt = now().Add(-time.Minute)
	if err := s.UpdateJob(ctx, runner.JobOpen, gone); err != nil {
		t.Fatal(err)
	}
	requireJobNotFound(t, s, old.Key())

	again := newJob("p", 1)
	again.Owner = runner.Owner{Org: "second-life"}
	if err := s.CreateJob(ctx, again); err != nil {
		t.Fatalf("CreateJob over a job past its retention: %v", err)
	}
	if again.Version != 1 {
		t.Fatalf("Version = %d, want 1", again.Version)
	}
	requireSameJob(t, again, mustGetJob(t, s, again.Key()))
	open, err := s.ListOpenJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if keys := jobKeys(open); len(keys) != 1 || keys[0] != again.Key() {
		t.Fatalf("ListOpenJobs = %v, want [%s]", keys, again.Key())
	}
	// And it is an ordinary job again.
	mustMoveJob(t, s, again.Key(), runner.JobServed, runner.JobClosed)
}

func jobInvalidRefused(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(j *runner.Job)
	}{
		{"zero id", func(j *runner.Job) { j.ID = 0 }},
		{"zero run attempt", func(j *runner.Job) { j.RunAttempt = 0 }},
		{"empty pool", func(j *runner.Job) { j.Pool = "" }},
		{"unknown status", func(j *runner.Job) { j.Status = "bogus" }},
	} {
		j := newJob("p", 7)
		tc.edit(j)
		if err := s.CreateJob(ctx, j); err == nil {
			t.Errorf("CreateJob with %s succeeded", tc.name)
		}
	}
	if err := s.CreateJob(ctx, nil); err == nil {
		t.Error("CreateJob(nil) succeeded")
	}
	if err := s.UpdateJob(ctx, runner.JobOpen, nil); err == nil {
		t.Error("UpdateJob(nil) succeeded")
	}
	requireJobNotFound(t, s, runner.JobKey(7, 1))
	open, err := s.ListOpenJobs(ctx)
	if err != nil || len(open) != 0 {
		t.Fatalf("ListOpenJobs = %v, %v; want none", jobKeys(open), err)
	}
}

func jobCanceledContextWritesNothing(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j := newJob("p", 1)
	if err := s.CreateJob(ctx, j); err == nil {
		t.Fatal("CreateJob with a canceled context succeeded")
	}
	requireJobNotFound(t, s, j.Key())

	mustCreateJob(t, s, j)
	next, _ := j.Transition(runner.JobServed, now())
	if err := s.UpdateJob(ctx, runner.JobOpen, next); err == nil {
		t.Fatal("UpdateJob with a canceled context succeeded")
	}
	requireSameJob(t, j, mustGetJob(t, s, j.Key()))
}
