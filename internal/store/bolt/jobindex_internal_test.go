package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// bucketSize counts the keys of one bucket.
func bucketSize(t *testing.T, s *Store, name []byte) int {
	t.Helper()
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(name).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The open index holds exactly the unsettled jobs, one entry each, and the
// expiry index exactly the settled ones: ListOpenJobs' cost follows open
// demand, and PurgeExpired's what is due, never the ledger's history.
func TestJobIndexesHoldOnlyTheirJobs(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "runfleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(j *runner.Job, from runner.JobStatus, to runner.JobStatus) *runner.Job {
		t.Helper()
		next, err := j.Transition(to, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateJob(ctx, from, next); err != nil {
			t.Fatal(err)
		}
		return next
	}
	const history, open = 40, 5
	for id := int64(1); id <= history+open; id++ {
		j := &runner.Job{ID: id, RunAttempt: 1, Pool: "p", Status: runner.JobOpen, QueuedAt: at.Add(time.Duration(id) * time.Second)}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		// Waiting and back, and a QueuedAt that moves while open: the
		// entry follows, never duplicates.
		j = write(j, runner.JobOpen, runner.JobWaiting)
		j.QueuedAt = j.QueuedAt.Add(time.Millisecond)
		j = write(j, runner.JobWaiting, runner.JobOpen)
		if id <= history {
			j = write(j, runner.JobOpen, runner.JobServed)
			write(j, runner.JobServed, runner.JobClosed)
		}
	}
	if n := bucketSize(t, s, bucketOpenJobs); n != open {
		t.Fatalf("open index holds %d entries, want %d", n, open)
	}
	if n := bucketSize(t, s, bucketJobExpiry); n != history {
		t.Fatalf("job expiry index holds %d entries, want %d", n, history)
	}
	list, err := s.ListOpenJobs(ctx)
	if err != nil || len(list) != open {
		t.Fatalf("ListOpenJobs = %d jobs, %v; want %d", len(list), err, open)
	}
	// A refused write leaves the indexes alone.
	stale := list[0].Clone()
	stale.Version--
	if err := s.UpdateJob(ctx, runner.JobOpen, stale); err == nil {
		t.Fatal("stale update succeeded")
	}
	a := store.Admission{Instance: &runner.Instance{Name: "x", Pool: "p", Status: runner.StatusPendingCreate}, MaxRunners: 1, Job: stale, JobFrom: runner.JobOpen}
	if err := s.CreateInstance(ctx, a); err == nil {
		t.Fatal("stale admission succeeded")
	}
	if n := bucketSize(t, s, bucketOpenJobs); n != open {
		t.Fatalf("open index holds %d entries after refused writes, want %d", n, open)
	}
}
