package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// jobWrite is one conditional write of a job: a create (from == "") or a
// compare-and-set on status `from` and the version read, plus the write's
// own id.
type jobWrite struct {
	key     string
	from    runner.JobStatus
	version int64
	writeID string
}

// nextJobWrite returns the record a write of j will store and the write
// itself: a create stores version 1, a compare-and-set the version after
// j's. A settled job's retention starts now unless the writer set it.
func (s *Store) nextJobWrite(from runner.JobStatus, j *runner.Job) (*runner.Job, jobWrite) {
	written := j.Clone()
	w := jobWrite{key: j.Key(), from: from, version: j.Version, writeID: requestToken()}
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
// over (the TTL sweeper is lazy); a compare-and-set finds the record it read.
func (w jobWrite) put(table string, item map[string]types.AttributeValue, now string) *types.Put {
	put := &types.Put{
		TableName: aws.String(table),
		Item:      item,
		ExpressionAttributeNames: map[string]string{
			"#status": attrStatus,
		},
		// The stored item comes back on failure at no read cost: it tells
		// our own retried write from a lost race.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if w.from == "" {
		put.ConditionExpression = aws.String("attribute_not_exists(#pk) OR (#status IN (:served, :closed, :expired, :rerun) AND #expires_at <= :now)")
		put.ExpressionAttributeNames["#pk"] = attrPK
		put.ExpressionAttributeNames["#expires_at"] = attrExpiresAt
		put.ExpressionAttributeValues = map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberS{Value: now},
		}
		for name, status := range map[string]runner.JobStatus{":served": runner.JobServed, ":closed": runner.JobClosed, ":expired": runner.JobExpired, ":rerun": runner.JobRerun} {
			put.ExpressionAttributeValues[name] = &types.AttributeValueMemberS{Value: string(status)}
		}
		return put
	}
	put.ConditionExpression = aws.String("#status = :from AND #version = :version")
	put.ExpressionAttributeNames["#version"] = attrVersion
	put.ExpressionAttributeValues = map[string]types.AttributeValue{
		":from":    &types.AttributeValueMemberS{Value: string(w.from)},
		":version": &types.AttributeValueMemberN{Value: strconv.FormatInt(w.version, 10)},
	}
	return put
}

// jobRefusal is the typed error for a job write whose condition failed.
func jobRefusal(from runner.JobStatus, j *runner.Job) error {
	if from == "" {
		return fmt.Errorf("job %s: %w", j.Key(), store.ErrJobExists)
	}
	return &store.JobConflictError{Job: j.Key(), ExpectedStatus: from, ExpectedVersion: j.Version}
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
	err = retryContention(ctx, func() error {
		put := w.put(s.table, item, formatTime(s.now()))
		_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
			TableName:                           put.TableName,
			Item:                                put.Item,
			ConditionExpression:                 put.ConditionExpression,
			ExpressionAttributeNames:            put.ExpressionAttributeNames,
			ExpressionAttributeValues:           put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure,
		})
		return err
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		// PutItem has no idempotency token: a retry by the SDK of a write
		// whose response was lost finds the write itself stored.
		if stringAttr(ccf.Item, attrWriteID) != w.writeID {
			return jobRefusal(from, j)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("write job %s: %w", w.key, err)
	}
	j.Version = written.Version
	j.ExpiresAt = written.ExpiresAt
	return nil
}
