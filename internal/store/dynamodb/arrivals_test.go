package dynamodb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testenv"
)

// The same contract bbolt and PostgreSQL pass, against DynamoDB Local.
func TestArrivalsContract(t *testing.T) {
	storetest.RunArrivals(t, func(t *testing.T) store.Store { return newTestStore(t, testenv.DynamoDB(t)) })
}

// The scan reads every page, skips instances and other pools' jobs, and
// leaves out a settled job whose retention is over but which the TTL
// sweeper has not removed yet.
func TestListArrivalsPagesAndRetention(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	s.pageSize = 2
	base := time.Now().Truncate(time.Millisecond).Add(-time.Hour)
	var want []time.Time
	for i := range int64(9) {
		j := testJob([]string{"p", "q", "p"}[i%3], 100+i)
		j.QueuedAt = base.Add(time.Duration(i) * time.Minute)
		mustCreateJob(t, s, j)
		if j.Pool == "p" {
			want = append(want, j.QueuedAt)
		}
	}
	gone := testJob("p", 200)
	gone.QueuedAt = base.Add(30 * time.Minute)
	mustCreateJob(t, s, gone)
	closed, err := gone.Transition(runner.JobClosed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	closed.ExpiresAt = time.Now().Add(-time.Minute) // retention over, not yet swept
	if err := s.UpdateJob(ctx, gone.Status, closed); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, testInstance("p", 999)) // an instance of the pool, and its pool slot

	byPool, err := s.ListArrivals(ctx, []string{"p"}, base)
	if err != nil {
		t.Fatal(err)
	}
	got := byPool["p"]
	slices.SortFunc(got, time.Time.Compare)
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("ListArrivals = %v, want %v", got, want)
	}
}
