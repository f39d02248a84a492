package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// unsettled reports whether a job's demand is still open (open,
// waiting or unmatched): the jobs the open index lists, kept however old.
func unsettled(s runner.JobStatus) bool {
	return s == runner.JobOpen || s == runner.JobWaiting || s == runner.JobUnmatched
}

// jobGoneAt reports whether a stored job is a settled one whose retention
// has passed at now: it counts as absent.
func jobGoneAt(j *runner.Job, now time.Time) bool {
	return !unsettled(j.Status) && !j.ExpiresAt.IsZero() && !j.ExpiresAt.After(now)
}

// goneSQL is jobGoneAt of the stored row, at $now.
const goneSQL = `(j.status NOT IN ('open', 'waiting', 'unmatched') AND j.expires_at <= $7)`

// createJobSQL writes a new job unless its key is taken by one that has
// not gone (jobGoneAt).
const createJobSQL = `
INSERT INTO runfleet_jobs AS j (key, status, version, queued_at, expires_at, record)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (key) DO UPDATE
	SET status = excluded.status, version = excluded.version, queued_at = excluded.queued_at,
		expires_at = excluded.expires_at, record = excluded.record
	WHERE ` + goneSQL

// updateJobSQL is the job's compare-and-set: status and version as read,
// and not gone.
const updateJobSQL = `
UPDATE runfleet_jobs AS j SET status = $2, version = $3, queued_at = $4, expires_at = $5, record = $6
WHERE key = $1 AND status = $8 AND version = $9 AND NOT ` + goneSQL

// jobWrite is one write of a job record: a create when from is "",
// otherwise a compare-and-set from status from at the version the caller
// read.
type jobWrite struct {
	record *runner.Job
	raw    string
	from   runner.JobStatus
	now    time.Time
}

// newJobWrite prepares the record j's write stores: its next version and,
// once the job is settled, an expiry if the writer left none.
func newJobWrite(j *runner.Job, from runner.JobStatus, now time.Time) (jobWrite, error) {
	record := j.Clone()
	record.Version = j.Version + 1
	if from == "" {
		record.Version = 1
	}
	if !unsettled(record.Status) && record.ExpiresAt.IsZero() {
		record.ExpiresAt = now.Add(store.DeletedRetention)
	}
	raw, err := json.Marshal(record)
	if err != nil {
		return jobWrite{}, fmt.Errorf("postgres: encode job %s: %w", record.Key(), err)
	}
	return jobWrite{record: record, raw: string(raw), from: from, now: now}, nil
}

// write runs the create or the compare-and-set on q; a refusal is
// ErrJobExists or the job's *store.ConflictError.
func (w jobWrite) write(ctx context.Context, q querier) error {
	r := w.record
	args := []any{r.Key(), string(r.Status), r.Version, r.QueuedAt, nullTime(r.ExpiresAt), w.raw, w.now}
	sql := createJobSQL
	if w.from != "" {
		sql = updateJobSQL
		args = append(args, string(w.from), r.Version-1)
	}
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("postgres: write job %s: %w", r.Key(), err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	if w.from == "" {
		return fmt.Errorf("postgres: job %s: %w", r.Key(), store.ErrJobExists)
	}
	return store.Expect(store.KindJob, r.Key(), w.from, r.Version-1).Conflict()
}

// reportTo tells the caller's struct what was stored, once committed.
func (w jobWrite) reportTo(j *runner.Job) {
	j.Version = w.record.Version
	j.ExpiresAt = w.record.ExpiresAt
}

// CreateJob implements store.Jobs.
func (s *Store) CreateJob(ctx context.Context, job *runner.Job) error {
	if err := store.CheckJob(job); err != nil {
		return err
	}
	return s.writeJob(ctx, job, "")
}

// UpdateJob implements store.Jobs.
func (s *Store) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	if next == nil {
		return errors.New("postgres: update job: nil job")
	}
	if err := runner.CheckJobTransition(next.Key(), from, next.Status); err != nil {
		return err
	}
	if err := store.CheckJob(next); err != nil {
		return err
	}
	return s.writeJob(ctx, next, from)
}

// writeJob commits one job write alone and reports it to caller.
func (s *Store) writeJob(ctx context.Context, caller *runner.Job, from runner.JobStatus) error {
	w, err := newJobWrite(caller, from, s.now())
	if err != nil {
		return err
	}
	if err := w.write(ctx, s.pool); err != nil {
		return err
	}
	w.reportTo(caller)
	return nil
}

// GetJob implements store.Jobs; a job past its retention is absent
// whether or not it has been purged yet.
func (s *Store) GetJob(ctx context.Context, key string) (*runner.Job, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, "SELECT record FROM runfleet_jobs WHERE key = $1", key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: job %s: %w", key, store.ErrJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get job %s: %w", key, err)
	}
	job, err := decodeJob(raw)
	if err != nil {
		return nil, err
	}
	if jobGoneAt(job, s.now()) {
		return nil, fmt.Errorf("postgres: job %s: %w", key, store.ErrJobNotFound)
	}
	return job, nil
}

// ListOpenJobs implements store.Jobs from the open index, oldest
// QueuedAt first.
func (s *Store) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT record FROM runfleet_jobs
		WHERE status IN ('open', 'waiting', 'unmatched') ORDER BY queued_at, key`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list open jobs: %w", err)
	}
	var out []*runner.Job
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("postgres: list open jobs: %w", err)
		}
		job, err := decodeJob(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, job)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list open jobs: %w", err)
	}
	return out, nil
}

func decodeJob(raw []byte) (*runner.Job, error) {
	var j runner.Job
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("postgres: decode job: %w", err)
	}
	return &j, nil
}
