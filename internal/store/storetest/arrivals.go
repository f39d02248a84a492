package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// RunArrivals checks a store's store.Arrivals: the queued times since a
// time of each pool asked for, open and settled jobs alike, in one read;
// no other pool's. A separate suite
// from Run because the capability is optional (a wrapper may lack it).
func RunArrivals(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("Arrivals/PoolSinceOpenAndSettled", func(t *testing.T) {
		s := newStore(t)
		src, ok := s.(store.Arrivals)
		if !ok {
			t.Fatalf("%T does not implement store.Arrivals", s)
		}
		ctx := context.Background()
		base := now().Add(-2 * time.Hour).Truncate(time.Second)
		job := func(pool string, id int64, minutes int) *runner.Job {
			j := newJob(pool, id)
			j.QueuedAt = base.Add(time.Duration(minutes) * time.Minute)
			mustCreateJob(t, s, j)
			return j
		}
		job("p", 1, 0) // before since
		job("p", 2, 10)
		closed := job("p", 3, 20)
		job("other", 4, 30)
		job("q", 6, 35)
		job("p", 5, 40)
		rerun := newJob("p", 5)
		rerun.RunAttempt, rerun.QueuedAt = 2, base.Add(50*time.Minute)
		mustCreateJob(t, s, rerun)
		mustMoveJob(t, s, closed.Key(), runner.JobClosed)

		byPool, err := src.ListArrivals(ctx, []string{"p", "q", "none"}, base.Add(5*time.Minute))
		if err != nil {
			t.Fatalf("ListArrivals: %v", err)
		}
		got := byPool["p"]
		slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
		want := []time.Time{base.Add(10 * time.Minute), base.Add(20 * time.Minute), base.Add(40 * time.Minute), base.Add(50 * time.Minute)}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Fatalf("ListArrivals p = %v, want %v (a settled job and a re-run count; another pool's and older ones do not)", got, want)
		}
		if q := byPool["q"]; len(q) != 1 || !q[0].Equal(base.Add(35*time.Minute)) {
			t.Fatalf("ListArrivals q = %v, want [%v]: every pool asked for is read in the one call", q, base.Add(35*time.Minute))
		}
		if len(byPool) != 2 {
			t.Fatalf("ListArrivals answered pools %v; want p and q only (not a pool not asked for, nor one with no job)", byPool)
		}
	})
}
