package dynamodb

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
)

// jobRecord is a job as stored, JOB#<id>#<run attempt>. As with
// instanceRecord, the tags are the attribute names on disk.
type jobRecord struct {
	PK string `dynamodbav:"pk"`
	// LiveShard and LiveSort (the QueuedAt stamp) are set only while the
	// job's demand is unsettled (open or waiting): they put it in liveIndex,
	// which ListOpenJobs reads.
	LiveShard string `dynamodbav:"live_shard,omitempty"`
	LiveSort  string `dynamodbav:"live_sort,omitempty"`
	// TTL is set only once the job is settled; see attrTTL.
	TTL     int64  `dynamodbav:"ttl,omitempty"`
	WriteID string `dynamodbav:"write_id"`

	ID         int64 `dynamodbav:"job_id"`
	RunAttempt int64 `dynamodbav:"run_attempt"`
	// Pool is omitted when empty (an unmatched job has none): pool is a key
	// of the live index, and DynamoDB refuses an empty string there.
	Pool           string   `dynamodbav:"pool,omitempty"`
	Owner          string   `dynamodbav:"owner,omitempty"`
	Repository     string   `dynamodbav:"repository,omitempty"`
	RunID          int64    `dynamodbav:"run_id,omitempty"`
	InstallationID int64    `dynamodbav:"installation_id,omitempty"`
	Labels         []string `dynamodbav:"labels,omitempty"`
	Status         string   `dynamodbav:"status"`
	Instance       string   `dynamodbav:"instance,omitempty"`
	Made           int      `dynamodbav:"made"`
	NextAttemptAt  string   `dynamodbav:"next_attempt_at,omitempty"`
	CheckedMade    int      `dynamodbav:"checked_made,omitempty"`
	RunnerName     string   `dynamodbav:"runner_name,omitempty"`
	Conclusion     string   `dynamodbav:"conclusion,omitempty"`
	QueuedAt       string   `dynamodbav:"queued_at,omitempty"`
	CompletedAt    string   `dynamodbav:"completed_at,omitempty"`
	Interrupted    string   `dynamodbav:"interrupted,omitempty"`
	InterruptFrom  string   `dynamodbav:"interrupted_since,omitempty"`
	RerunCalls     int      `dynamodbav:"rerun_calls,omitempty"`
	RerunAt        string   `dynamodbav:"rerun_requested_at,omitempty"`
	RerunOutcome   string   `dynamodbav:"rerun_outcome,omitempty"`
	Delivery       string   `dynamodbav:"delivery,omitempty"`
	DeliverySource string   `dynamodbav:"delivery_source,omitempty"`
	Unmatched      string   `dynamodbav:"unmatched_reason,omitempty"`
	UnmatchedWords string   `dynamodbav:"unmatched_detail,omitempty"`
	SeqScaleSet    int64    `dynamodbav:"seq_scale_set,omitempty"`
	SeqMessage     int64    `dynamodbav:"seq_message,omitempty"`
	SeqIndex       int      `dynamodbav:"seq_index,omitempty"`
	AssignedAt     string   `dynamodbav:"assigned_at,omitempty"`
	Version        int64    `dynamodbav:"version"`

	CreatedAt       string `dynamodbav:"created_at,omitempty"`
	UpdatedAt       string `dynamodbav:"updated_at,omitempty"`
	StatusChangedAt string `dynamodbav:"status_changed_at,omitempty"`
	ExpiresAt       string `dynamodbav:"expires_at,omitempty"`
}

func jobKey(key string) string { return prefixJob + key }

// settledJob reports whether a job's demand is over (served, closed,
// expired or rerun; open, waiting and unmatched are not): its record only waits for its retention to end.
func settledJob(s runner.JobStatus) bool {
	return s != runner.JobOpen && s != runner.JobWaiting && s != runner.JobUnmatched
}

// marshalJob returns the item for j, written by the write writeID. The
// index keys are set only while j is unsettled and the TTL only once it is
// settled, so neither an open job can be swept nor a settled one listed.
func marshalJob(j *runner.Job, writeID string) (map[string]types.AttributeValue, error) {
	rec := jobRecord{
		PK:              jobKey(j.Key()),
		WriteID:         writeID,
		ID:              j.ID,
		RunAttempt:      j.RunAttempt,
		Pool:            j.Pool,
		Owner:           j.Owner.String(),
		Repository:      j.Repository,
		RunID:           j.RunID,
		InstallationID:  j.InstallationID,
		Labels:          j.Labels,
		Status:          string(j.Status),
		Instance:        j.Instance,
		Made:            j.Made,
		NextAttemptAt:   formatTime(j.NextAttemptAt),
		CheckedMade:     j.CheckedMade,
		RunnerName:      j.RunnerName,
		Conclusion:      j.Conclusion,
		QueuedAt:        formatTime(j.QueuedAt),
		CompletedAt:     formatTime(j.CompletedAt),
		Interrupted:     j.Interrupted,
		InterruptFrom:   formatTime(j.InterruptedSince),
		RerunCalls:      j.RerunCalls,
		RerunAt:         formatTime(j.RerunRequestedAt),
		RerunOutcome:    j.RerunOutcome,
		Delivery:        j.Delivery,
		DeliverySource:  j.DeliverySource,
		Unmatched:       j.UnmatchedReason,
		UnmatchedWords:  j.UnmatchedDetail,
		SeqScaleSet:     j.ScaleSetSeq.ScaleSetID,
		SeqMessage:      j.ScaleSetSeq.MessageID,
		SeqIndex:        j.ScaleSetSeq.Index,
		AssignedAt:      formatTime(j.AssignedAt),
		Version:         j.Version,
		CreatedAt:       formatTime(j.CreatedAt),
		UpdatedAt:       formatTime(j.UpdatedAt),
		StatusChangedAt: formatTime(j.StatusChangedAt),
		ExpiresAt:       formatTime(j.ExpiresAt),
	}
	if settledJob(j.Status) {
		if !j.ExpiresAt.IsZero() {
			rec.TTL = ttlSeconds(j.ExpiresAt)
		}
	} else {
		rec.LiveShard = shardKey(jobShardPrefix, shardOf(rec.PK))
		rec.LiveSort = queuedSortKey(j.QueuedAt)
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal job %s: %w", j.Key(), err)
	}
	return item, nil
}

// queuedSortKey is a job's sort key in liveIndex. A zero QueuedAt (a
// writer that did not know it) sorts first, as the oldest: DynamoDB refuses
// an empty string as an index key.
func queuedSortKey(queuedAt time.Time) string {
	return queuedAt.UTC().Format(timeLayout)
}

func unmarshalJob(item map[string]types.AttributeValue) (*runner.Job, error) {
	var rec jobRecord
	if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
		return nil, fmt.Errorf("unmarshal job item: %w", err)
	}
	var owner runner.Owner
	if err := owner.UnmarshalText([]byte(rec.Owner)); err != nil {
		return nil, fmt.Errorf("unmarshal job item: %w", err)
	}
	j := &runner.Job{
		ID:              rec.ID,
		RunAttempt:      rec.RunAttempt,
		Pool:            rec.Pool,
		Owner:           owner,
		Repository:      rec.Repository,
		RunID:           rec.RunID,
		InstallationID:  rec.InstallationID,
		Labels:          rec.Labels,
		Status:          runner.JobStatus(rec.Status),
		Instance:        rec.Instance,
		Made:            rec.Made,
		CheckedMade:     rec.CheckedMade,
		RunnerName:      rec.RunnerName,
		Conclusion:      rec.Conclusion,
		Interrupted:     rec.Interrupted,
		RerunCalls:      rec.RerunCalls,
		RerunOutcome:    rec.RerunOutcome,
		Delivery:        rec.Delivery,
		DeliverySource:  rec.DeliverySource,
		UnmatchedReason: rec.Unmatched,
		UnmatchedDetail: rec.UnmatchedWords,
		ScaleSetSeq:     runner.MessageSeq{ScaleSetID: rec.SeqScaleSet, MessageID: rec.SeqMessage, Index: rec.SeqIndex},
		Version:         rec.Version,
	}
	var err error
	for _, f := range []struct {
		dst *time.Time
		src string
	}{
		{&j.NextAttemptAt, rec.NextAttemptAt},
		{&j.QueuedAt, rec.QueuedAt},
		{&j.RerunRequestedAt, rec.RerunAt},
		{&j.CompletedAt, rec.CompletedAt},
		{&j.InterruptedSince, rec.InterruptFrom},
		{&j.CreatedAt, rec.CreatedAt},
		{&j.UpdatedAt, rec.UpdatedAt},
		{&j.StatusChangedAt, rec.StatusChangedAt},
		{&j.ExpiresAt, rec.ExpiresAt},
		{&j.AssignedAt, rec.AssignedAt},
	} {
		if *f.dst, err = parseTime(f.src); err != nil {
			return nil, fmt.Errorf("job %s: %w", rec.PK, err)
		}
	}
	return j, nil
}
