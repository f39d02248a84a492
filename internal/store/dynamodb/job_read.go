package dynamodb

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// GetJob implements store.Jobs. It reads with ConsistentRead, so a caller
// about to compare-and-set sees the latest version. A settled job past its
// retention reads as not found, as CreateJob treats it, even if the TTL
// sweeper has not removed it yet.
func (s *Store) GetJob(ctx context.Context, key string) (*runner.Job, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(jobKey(key)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", key, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("get job %s: %w", key, store.ErrJobNotFound)
	}
	j, err := unmarshalJob(out.Item)
	if err != nil {
		return nil, err
	}
	if settledJob(j.Status) && expired(formatTime(j.ExpiresAt), s.now()) {
		return nil, fmt.Errorf("get job %s: %w", key, store.ErrJobNotFound)
	}
	return j, nil
}

// ListOpenJobs implements store.Jobs: it reads the job shards of liveIndex,
// which hold only unsettled jobs, so its cost follows open demand. A job
// settled since the index was last updated is dropped after its consistent
// read; one queued a moment ago may be missing, which every caller of a list
// must live with.
func (s *Store) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	items, err := s.liveItems(ctx, shardKeys(jobShardPrefix), "")
	if err != nil {
		return nil, fmt.Errorf("list open jobs: %w", err)
	}
	jobs := make([]*runner.Job, 0, len(items))
	for _, item := range items {
		j, err := unmarshalJob(item)
		if err != nil {
			return nil, err
		}
		if !settledJob(j.Status) {
			jobs = append(jobs, j)
		}
	}
	// Each shard comes back oldest first, but the batched reads of the
	// full items do not keep order: sort the merged whole.
	slices.SortFunc(jobs, func(a, b *runner.Job) int {
		return cmp.Or(a.QueuedAt.Compare(b.QueuedAt), cmp.Compare(a.ID, b.ID), cmp.Compare(a.RunAttempt, b.RunAttempt))
	})
	return jobs, nil
}
