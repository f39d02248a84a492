package bolt

import (
	"context"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Jobs = (*Store)(nil)

// CreateJob implements store.Jobs.
func (s *Store) CreateJob(ctx context.Context, job *runner.Job) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: create job: %w", err)
	}
	if err := store.CheckJob(job); err != nil {
		return err
	}
	now := s.now()
	return s.writeJob(newJobWrite(job, "", now), now, job)
}

// UpdateJob implements store.Jobs.
func (s *Store) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: update job: %w", err)
	}
	if next == nil {
		return errors.New("bolt: update job: nil job")
	}
	if err := runner.CheckJobTransition(next.Key(), from, next.Status); err != nil {
		return err
	}
	if err := store.CheckJob(next); err != nil {
		return err
	}
	now := s.now()
	return s.writeJob(newJobWrite(next, from, now), now, next)
}

// writeJob commits w alone, judging retention at now, and reports what
// it stored to caller.
func (s *Store) writeJob(w jobWrite, now time.Time, caller *runner.Job) error {
	err := s.update(func(tx *bbolt.Tx) error {
		stored, err := w.check(tx, now)
		if err != nil {
			return err
		}
		return w.apply(tx, stored)
	})
	if err != nil {
		return err
	}
	w.reportTo(caller)
	return nil
}

// GetJob implements store.Jobs. Retention is judged here against the
// clock, so a job past it is absent whether or not PurgeExpired has
// removed it yet.
func (s *Store) GetJob(ctx context.Context, key string) (*runner.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: get job: %w", err)
	}
	job, err := jobKind.load(s, key)
	if err != nil {
		return nil, err
	}
	if job == nil || jobGoneAt(job, s.now()) {
		return nil, fmt.Errorf("bolt: job %s: %w", key, store.ErrJobNotFound)
	}
	return job, nil
}

// ListOpenJobs implements store.Jobs by walking the open index, which
// holds only unsettled jobs and is ordered by QueuedAt, then job key.
func (s *Store) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: list open jobs: %w", err)
	}
	var out []*runner.Job
	err := s.db.View(func(tx *bbolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		c := tx.Bucket(bucketOpenJobs).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			key, err := openJobKeyJob(k)
			if err != nil {
				return err
			}
			job, err := jobKind.read(jobs, key)
			if err != nil {
				return err
			}
			if job == nil {
				return fmt.Errorf("bolt: open job index names job %s, which has no record", key)
			}
			out = append(out, job)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
