package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// jobWrite is one conditional write of a job: a create (Status == "") or a
// compare-and-set on the status and version read, plus the write's own id.
type jobWrite struct {
	store.Expectation
	writeID string
}

// nextJobWrite returns the record a write of j will store and the write
// itself: a create stores version 1, a compare-and-set the version after
// j's. A settled job's retention starts now unless the writer set it.
func (s *Store) nextJobWrite(from runner.JobStatus, j *runner.Job) (*runner.Job, jobWrite) {
	written := j.Clone()
	w := jobWrite{Expectation: store.Expect(store.KindJob, j.Key(), from, j.Version), writeID: requestToken()}
	if from == "" {
		written.Version = 1
	} else {
		written.Version = j.Version + 1
	}
	if settledJob(written.Status) && written.ExpiresAt.IsZero() {
		written.ExpiresAt = s.now().Add(store.DeletedRetention)
	}
	return written, w
}

// put is the write as a Put of item, for PutItem or a transaction. A create
// finds the key free, or held only by a settled record whose retention is
// over (the TTL sweeper is lazy); a compare-and-set is the generic one.
func (w jobWrite) put(s *Store, item map[string]types.AttributeValue, now string) *types.Put {
	if w.Status != "" {
		return s.conditionalPut(item, casCondition(w.Expectation))
	}
	c := condition{
		expr:   "attribute_not_exists(#pk) OR (#status IN (:served, :closed, :expired, :rerun) AND #expires_at <= :now)",
		names:  map[string]string{"#pk": attrPK, "#status": attrStatus, "#expires_at": attrExpiresAt},
		values: map[string]types.AttributeValue{":now": &types.AttributeValueMemberS{Value: now}},
	}
	for name, status := range map[string]runner.JobStatus{":served": runner.JobServed, ":closed": runner.JobClosed, ":expired": runner.JobExpired, ":rerun": runner.JobRerun} {
		c.values[name] = &types.AttributeValueMemberS{Value: string(status)}
	}
	return s.conditionalPut(item, c)
}

// refusal is the typed error for a job write whose condition failed.
func (w jobWrite) refusal() error {
	if w.Status == "" {
		return fmt.Errorf("job %s: %w", w.Key, store.ErrJobExists)
	}
	return w.Conflict()
}

// CreateJob implements store.Jobs with one conditional PutItem.
func (s *Store) CreateJob(ctx context.Context, job *runner.Job) error {
	if err := store.CheckJob(job); err != nil {
		return err
	}
	return s.putJob(ctx, "", job)
}

// UpdateJob implements store.Jobs: a compare-and-set PutItem of the whole
// record.
func (s *Store) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	if next == nil {
		return errors.New("update job: nil job")
	}
	if err := runner.CheckJobTransition(next.Key(), from, next.Status); err != nil {
		return err
	}
	if err := store.CheckJob(next); err != nil {
		return err
	}
	return s.putJob(ctx, from, next)
}

// putJob writes j conditionally (see jobWrite) and, on success only, gives
// the caller the stored Version and ExpiresAt.
func (s *Store) putJob(ctx context.Context, from runner.JobStatus, j *runner.Job) error {
	written, w := s.nextJobWrite(from, j)
	item, err := marshalJob(written, w.writeID)
	if err != nil {
		return err
	}
	err = s.putIf(ctx, func() *types.Put { return w.put(s, item, formatTime(s.now())) }, w.writeID)
	if _, lost := storedOnConditionFailure(err); lost {
		return w.refusal()
	}
	if err != nil {
		return fmt.Errorf("write job %s: %w", w.Key, err)
	}
	j.Version = written.Version
	j.ExpiresAt = written.ExpiresAt
	return nil
}
