package dynamodb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// CreateInstance writes a.Instance, reserves a slot of its pool and, when
// a.Job is set, creates or compare-and-sets the job, in one
// TransactWriteItems: all of it or none of it. Which condition failed picks
// the refusal, in this order when several did: ErrAlreadyExists (a
// redelivered job that already has its runner is a duplicate, not a
// capacity problem), then the job's (ErrJobExists or *ConflictError: the
// caller decided on a job that has changed since and must read it again
// before capacity means anything), then ErrPoolFull.
func (s *Store) CreateInstance(ctx context.Context, a store.Admission) error {
	if err := store.CheckAdmission(a); err != nil {
		return err
	}
	inst := a.Instance
	first := inst.Clone()
	first.Version = 1
	instItem, err := marshalInstance(first, requestToken())
	if err != nil {
		return err
	}
	var job *runner.Job
	var jw jobWrite
	var jobItem map[string]types.AttributeValue
	if a.Job != nil {
		job, jw = s.nextJobWrite(a.JobFrom, a.Job)
		if jobItem, err = marshalJob(job, jw.writeID); err != nil {
			return err
		}
	}

	err = retryContention(ctx, func() error {
		now := formatTime(s.now())
		// The job goes before the pool counter: should a cancellation ever
		// name only the first failed condition, the refusal that
		// admissionRefused prefers still wins.
		items := []types.TransactWriteItem{{Put: s.putNewInstance(instItem, now)}}
		if job != nil {
			items = append(items, types.TransactWriteItem{Put: jw.put(s, jobItem, now)})
		}
		items = append(items, types.TransactWriteItem{Update: s.reserveSlot(inst.Pool, a.MaxRunners)})
		// The SDK gives each call a ClientRequestToken and keeps it across
		// its own retries, so a retry after a lost response is answered with
		// the first attempt's success rather than a refusal. (A contended
		// attempt wrote nothing, so the next loop may take a new token.)
		_, err := s.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: items})
		return err
	})
	if failed, ok := conditionFailed(err); ok {
		return admissionRefused(a, jw, failed)
	}
	if err != nil {
		return fmt.Errorf("create instance %q: %w", inst.Name, err)
	}
	inst.Version = first.Version
	if job != nil {
		a.Job.Version = job.Version
		a.Job.ExpiresAt = job.ExpiresAt
	}
	return nil
}

// admissionRefused turns the failed conditions of an admission's
// transaction (instance, then job if any, then pool counter) into its typed
// refusal.
func admissionRefused(a store.Admission, jw jobWrite, failed []bool) error {
	failedAt := func(i int) bool { return i < len(failed) && failed[i] }
	inst := a.Instance
	poolAt := 1
	if a.Job != nil {
		poolAt = 2
	}
	switch {
	case failedAt(0):
		return fmt.Errorf("create instance %q: %w", inst.Name, store.ErrAlreadyExists)
	case a.Job != nil && failedAt(1):
		return fmt.Errorf("create instance %q: %w", inst.Name, jw.refusal())
	case failedAt(poolAt):
		return fmt.Errorf("create instance %q in pool %q (max %d): %w", inst.Name, inst.Pool, a.MaxRunners, store.ErrPoolFull)
	}
	return fmt.Errorf("create instance %q: transaction cancelled on a condition of no item it wrote", inst.Name)
}

// putNewInstance writes item unless a record of the same name exists. A
// deleted record past its expiry counts as absent: the TTL sweeper may not
// have removed it yet, but it no longer guards against anything.
func (s *Store) putNewInstance(item map[string]types.AttributeValue, now string) *types.Put {
	return &types.Put{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR (#status = :deleted AND #expires_at <= :now)"),
		ExpressionAttributeNames: map[string]string{
			"#pk":         attrPK,
			"#status":     attrStatus,
			"#expires_at": attrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":deleted": &types.AttributeValueMemberS{Value: string(runner.StatusDeleted)},
			":now":     &types.AttributeValueMemberS{Value: now},
		},
	}
}

// reserveSlot adds one to the pool's live counter if that keeps it within
// maxRunners (at least 1, store.CheckAdmission saw to it). The pool item
// springs into being on the pool's first create.
func (s *Store) reserveSlot(pool string, maxRunners int) *types.Update {
	return &types.Update{
		TableName:           aws.String(s.table),
		Key:                 keyOf(poolKey(pool)),
		UpdateExpression:    aws.String("ADD #live :one"),
		ConditionExpression: aws.String("attribute_not_exists(#live) OR #live < :max"),
		ExpressionAttributeNames: map[string]string{
			"#live": attrPoolLive,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":max": &types.AttributeValueMemberN{Value: strconv.Itoa(maxRunners)},
		},
	}
}
