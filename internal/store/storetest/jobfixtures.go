package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// newJob returns a minimal open job, as an intake records a queued one.
func newJob(pool string, id int64) *runner.Job {
	at := now()
	return &runner.Job{
		ID:              id,
		RunAttempt:      1,
		Pool:            pool,
		Owner:           runner.Owner{Org: "octo-org"},
		Repository:      "octo-org/hello",
		Labels:          []string{"self-hosted", "linux"},
		Status:          runner.JobOpen,
		QueuedAt:        at,
		CreatedAt:       at,
		UpdatedAt:       at,
		StatusChangedAt: at,
	}
}

// fullJob sets every field of runner.Job to a distinctive non-zero value,
// times in a non-UTC zone at millisecond precision (see fullInstance).
func fullJob(pool string) *runner.Job {
	zone := time.FixedZone("UTC-3:30", -(3*3600 + 1800))
	base := time.Date(2031, time.July, 4, 23, 59, 58, 999_000_000, zone)
	j := &runner.Job{
		ID:               9_007_199_254_740_997, // above 2^53: must not pass through a float64
		RunAttempt:       4,
		Pool:             pool,
		Owner:            runner.Owner{Enterprise: "acme"},
		Repository:       "acme/ünïcode-repo",
		RunID:            7_700_000_001,
		InstallationID:   4_294_967_299,
		Labels:           []string{"self-hosted", "Linux", "arm64", "gpu: \"h100\""},
		Status:           runner.JobOpen,
		Made:             3,
		NextAttemptAt:    base.Add(45 * time.Second),
		CheckedMade:      2,
		RunnerName:       "runfleet-other-runner",
		Conclusion:       "not yet:\n\tsecond line",
		QueuedAt:         base.Add(-time.Hour),
		Interrupted:      "runfleet-spot-9-1",
		InterruptedSince: base.Add(20 * time.Second),
		CompletedAt:      base.Add(30 * time.Second),
		RerunCalls:       2,
		RerunRequestedAt: base.Add(5 * time.Minute),
		RerunOutcome:     runner.RerunRefused,
		Delivery:         "0f1e2d3c-delivery",
		DeliverySource:   "delivery_log",
		UnmatchedReason:  "labels",
		UnmatchedDetail:  "no pool has the label gpu",
		ScaleSetSeq:      runner.MessageSeq{ScaleSetID: 4_294_967_301, MessageID: 9_007_199_254_740_993, Index: 49},
		AssignedAt:       base.Add(-30 * time.Minute),
		CreatedAt:        base,
		UpdatedAt:        base.Add(time.Millisecond),
		StatusChangedAt:  base.Add(2 * time.Millisecond),
		ExpiresAt:        base.Add(72 * time.Hour),
	}
	j.Instance = j.InstanceFor(j.Made)
	return j
}

// requireSameJob compares every field (see requireSameRecord).
func requireSameJob(t *testing.T, want, got *runner.Job) {
	t.Helper()
	if got == nil {
		t.Fatalf("job %s: got nil", want.Key())
	}
	requireSameRecord(t, "job "+want.Key(), want, got)
}

func mustCreateJob(t *testing.T, s store.Store, j *runner.Job) {
	t.Helper()
	if err := s.CreateJob(context.Background(), j); err != nil {
		t.Fatalf("CreateJob(%s): %v", j.Key(), err)
	}
}

func mustGetJob(t *testing.T, s store.Store, key string) *runner.Job {
	t.Helper()
	got, err := s.GetJob(context.Background(), key)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", key, err)
	}
	return got
}

func requireJobNotFound(t *testing.T, s store.Store, key string) {
	t.Helper()
	got, err := s.GetJob(context.Background(), key)
	if !errors.Is(err, store.ErrJobNotFound) {
		t.Fatalf("GetJob(%s) = %+v, %v; want ErrJobNotFound", key, got, err)
	}
}

// mustMoveJob walks the stored job through statuses with one
// compare-and-set each, and returns the last version written.
func mustMoveJob(t *testing.T, s store.Store, key string, statuses ...runner.JobStatus) *runner.Job {
	t.Helper()
	cur := mustGetJob(t, s, key)
	for _, to := range statuses {
		next, err := cur.Transition(to, now())
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := s.UpdateJob(context.Background(), cur.Status, next); err != nil {
			t.Fatalf("UpdateJob(%s %s -> %s): %v", key, cur.Status, to, err)
		}
		cur = next
	}
	return cur
}

// nextInstanceFor is what the engine admits for an open job: its next
// instance, and the job's next version naming and counting it.
func nextInstanceFor(j *runner.Job) (*runner.Instance, *runner.Job) {
	next := j.Clone()
	next.Made++
	next.Instance = next.InstanceFor(next.Made)
	next.UpdatedAt = now()
	inst := newInstance(j.Pool, j.ID)
	inst.Name = next.Instance
	inst.RunAttempt = j.RunAttempt
	return inst, next
}

func jobKeys(list []*runner.Job) []string {
	out := make([]string, len(list))
	for i, j := range list {
		out[i] = j.Key()
	}
	return out
}
