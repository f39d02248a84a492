package dynamodb

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
)

// instanceRecord is an instance as stored. The tags are the attribute names,
// spelled out so a rename in the domain type can never silently change what
// is on disk. Times are fixed-width RFC 3339 strings (see formatTime).
type instanceRecord struct {
	PK string `dynamodbav:"pk"`
	// LiveShard and LiveSort (the pool) are set only while the instance is
	// live: they put the item in the sparse liveIndex.
	LiveShard string `dynamodbav:"live_shard,omitempty"`
	LiveSort  string `dynamodbav:"live_sort,omitempty"`
	// TTL is set only once deleted; see attrTTL.
	TTL int64 `dynamodbav:"ttl,omitempty"`
	// WriteID is random per write. When the SDK retries a write whose first
	// attempt succeeded but whose response was lost, the retry's condition
	// fails; finding its own WriteID stored shows the write was ours, where
	// comparing content could not tell it from an identical rival write.
	WriteID string `dynamodbav:"write_id"`

	Name           string   `dynamodbav:"name"`
	Pool           string   `dynamodbav:"pool"`
	Status         string   `dynamodbav:"status"`
	RunnerStatus   string   `dynamodbav:"runner_status,omitempty"`
	JobID          int64    `dynamodbav:"job_id"`
	RunAttempt     int64    `dynamodbav:"run_attempt"`
	ActiveJobID    int64    `dynamodbav:"active_job_id,omitempty"`
	ActiveAttempt  int64    `dynamodbav:"active_run_attempt,omitempty"`
	Interruption   string   `dynamodbav:"interruption,omitempty"`
	InterruptedAt  string   `dynamodbav:"interrupted_at,omitempty"`
	InterruptFrom  string   `dynamodbav:"interrupted_since,omitempty"`
	JobQueuedAt    string   `dynamodbav:"job_queued_at,omitempty"`
	Repository     string   `dynamodbav:"repository,omitempty"`
	Owner          string   `dynamodbav:"owner,omitempty"`
	InstallationID int64    `dynamodbav:"installation_id,omitempty"`
	Labels         []string `dynamodbav:"labels,omitempty"`
	GitHubRunnerID int64    `dynamodbav:"github_runner_id,omitempty"`
	RunnerRemoved  bool     `dynamodbav:"runner_removed,omitempty"`
	NotBusySince   string   `dynamodbav:"not_busy_since,omitempty"`
	ProviderID     string   `dynamodbav:"provider_id,omitempty"`
	ProviderFault  string   `dynamodbav:"provider_fault,omitempty"`
	MachineType    string   `dynamodbav:"machine_type,omitempty"`
	Market         string   `dynamodbav:"market,omitempty"`
	MachineAt      string   `dynamodbav:"machine_at,omitempty"`
	// Cost is a map attribute, present once the instance is deleted.
	Cost          *costRecord `dynamodbav:"cost,omitempty"`
	Attempts      int         `dynamodbav:"attempts"`
	NextAttemptAt string      `dynamodbav:"next_attempt_at,omitempty"`
	WaitingGitHub string      `dynamodbav:"waiting_for_github,omitempty"`
	CreateAttempt int         `dynamodbav:"create_attempt"`
	// Claim and ClaimUntil name the work holding the instance in creating
	// or deleting, and when it has stopped for certain (engine's takeover).
	Claim      string `dynamodbav:"claim,omitempty"`
	ClaimUntil string `dynamodbav:"claim_until,omitempty"`
	Version    int64  `dynamodbav:"version"`

	CreatedAt       string `dynamodbav:"created_at,omitempty"`
	UpdatedAt       string `dynamodbav:"updated_at,omitempty"`
	StatusChangedAt string `dynamodbav:"status_changed_at,omitempty"`
	ExpiresAt       string `dynamodbav:"expires_at,omitempty"`
}

// costRecord is a runner.Cost as stored.
type costRecord struct {
	USD        float64 `dynamodbav:"usd"`
	USDPerHour float64 `dynamodbav:"usd_per_hour,omitempty"`
	Seconds    int64   `dynamodbav:"seconds"`
	Unknown    string  `dynamodbav:"unknown,omitempty"`
}

func instanceKey(name string) string { return prefixInstance + name }
func poolKey(pool string) string     { return prefixPool + pool }

func keyOf(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pk}}
}

// marshalInstance returns the item for inst, written by the write writeID.
// The live-index keys are set only while inst is live and the TTL only once
// it is deleted, so neither a live instance can be swept nor a deleted one
// listed.
func marshalInstance(inst *runner.Instance, writeID string) (map[string]types.AttributeValue, error) {
	rec := instanceRecord{
		PK:              instanceKey(inst.Name),
		WriteID:         writeID,
		Name:            inst.Name,
		Pool:            inst.Pool,
		Status:          string(inst.Status),
		RunnerStatus:    string(inst.RunnerStatus),
		JobID:           inst.JobID,
		RunAttempt:      inst.RunAttempt,
		ActiveJobID:     inst.ActiveJobID,
		ActiveAttempt:   inst.ActiveRunAttempt,
		Interruption:    string(inst.Interruption),
		InterruptedAt:   formatTime(inst.InterruptedAt),
		InterruptFrom:   formatTime(inst.InterruptedSince),
		JobQueuedAt:     formatTime(inst.JobQueuedAt),
		Repository:      inst.Repository,
		MachineType:     inst.MachineType,
		Market:          inst.Market,
		MachineAt:       formatTime(inst.MachineAt),
		Owner:           inst.Owner.String(),
		InstallationID:  inst.InstallationID,
		Labels:          inst.Labels,
		GitHubRunnerID:  inst.GitHubRunnerID,
		RunnerRemoved:   inst.RunnerRemoved,
		NotBusySince:    formatTime(inst.NotBusySince),
		ProviderID:      inst.ProviderID,
		ProviderFault:   inst.ProviderFault,
		Attempts:        inst.Attempts,
		NextAttemptAt:   formatTime(inst.NextAttemptAt),
		WaitingGitHub:   formatTime(inst.WaitingForGitHub),
		CreateAttempt:   inst.CreateAttempt,
		Claim:           inst.Claim,
		ClaimUntil:      formatTime(inst.ClaimUntil),
		Version:         inst.Version,
		CreatedAt:       formatTime(inst.CreatedAt),
		UpdatedAt:       formatTime(inst.UpdatedAt),
		StatusChangedAt: formatTime(inst.StatusChangedAt),
		ExpiresAt:       formatTime(inst.ExpiresAt),
	}
	if c := inst.Cost; c != nil {
		rec.Cost = &costRecord{USD: c.USD, USDPerHour: c.USDPerHour, Seconds: c.Seconds, Unknown: c.Unknown}
	}
	if inst.Status.Live() {
		rec.LiveShard = shardKey(instanceShardPrefix, shardOf(rec.PK))
		rec.LiveSort = inst.Pool
	} else if !inst.ExpiresAt.IsZero() {
		rec.TTL = ttlSeconds(inst.ExpiresAt)
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal instance %q: %w", inst.Name, err)
	}
	return item, nil
}

func unmarshalInstance(item map[string]types.AttributeValue) (*runner.Instance, error) {
	var rec instanceRecord
	if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
		return nil, fmt.Errorf("unmarshal instance item: %w", err)
	}
	var owner runner.Owner
	if err := owner.UnmarshalText([]byte(rec.Owner)); err != nil {
		return nil, fmt.Errorf("unmarshal instance item: %w", err)
	}
	inst := &runner.Instance{
		Name:             rec.Name,
		Pool:             rec.Pool,
		Status:           runner.Status(rec.Status),
		RunnerStatus:     runner.RunnerStatus(rec.RunnerStatus),
		JobID:            rec.JobID,
		RunAttempt:       rec.RunAttempt,
		ActiveJobID:      rec.ActiveJobID,
		ActiveRunAttempt: rec.ActiveAttempt,
		Interruption:     runner.Interruption(rec.Interruption),
		Owner:            owner,
		InstallationID:   rec.InstallationID,
		Labels:           rec.Labels,
		GitHubRunnerID:   rec.GitHubRunnerID,
		RunnerRemoved:    rec.RunnerRemoved,
		ProviderID:       rec.ProviderID,
		ProviderFault:    rec.ProviderFault,
		Attempts:         rec.Attempts,
		CreateAttempt:    rec.CreateAttempt,
		Claim:            rec.Claim,
		Version:          rec.Version,
		Repository:       rec.Repository,
		MachineType:      rec.MachineType,
		Market:           rec.Market,
	}
	if c := rec.Cost; c != nil {
		inst.Cost = &runner.Cost{USD: c.USD, USDPerHour: c.USDPerHour, Seconds: c.Seconds, Unknown: c.Unknown}
	}
	var err error
	for _, f := range []struct {
		dst *time.Time
		src string
	}{
		{&inst.NextAttemptAt, rec.NextAttemptAt},
		{&inst.WaitingForGitHub, rec.WaitingGitHub},
		{&inst.ClaimUntil, rec.ClaimUntil},
		{&inst.NotBusySince, rec.NotBusySince},
		{&inst.InterruptedAt, rec.InterruptedAt},
		{&inst.InterruptedSince, rec.InterruptFrom},
		{&inst.JobQueuedAt, rec.JobQueuedAt},
		{&inst.MachineAt, rec.MachineAt},
		{&inst.CreatedAt, rec.CreatedAt},
		{&inst.UpdatedAt, rec.UpdatedAt},
		{&inst.StatusChangedAt, rec.StatusChangedAt},
		{&inst.ExpiresAt, rec.ExpiresAt},
	} {
		if *f.dst, err = parseTime(f.src); err != nil {
			return nil, fmt.Errorf("instance %q: %w", rec.Name, err)
		}
	}
	return inst, nil
}

// timeLayout is RFC 3339 in UTC with all nine fraction digits kept: every
// stamp has the same width, so comparing them as strings (as condition
// expressions do) compares them in time, and nothing finer than the Go value
// is lost.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad stored time %q: %w", s, err)
	}
	return t, nil
}

// ttlSeconds rounds up, so the sweeper never removes an item before it has
// expired by our own reckoning.
func ttlSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// expired reports whether an item with the stored expiry stamp has expired at
// now; items without one never expire.
func expired(expiresAt string, now time.Time) bool {
	return expiresAt != "" && expiresAt <= formatTime(now)
}
