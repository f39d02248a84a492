package bolt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// lifecycle is every status write one job's runner goes through.
var lifecycle = []runner.Status{
	runner.StatusCreating, runner.StatusRunning, runner.StatusPendingDelete,
	runner.StatusDeleting, runner.StatusDeleted,
}

// BenchmarkCreateAndTransition measures one job's whole life in the store:
// the conditional create and five compare-and-set updates, each its own
// fsynced transaction, as the engine issues them. ns/write is the per-commit
// cost, which fsync dominates.
func BenchmarkCreateAndTransition(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		inst := pendingInstance("bench", int64(i))
		if err := s.CreateInstance(ctx, inst, 1<<30); err != nil {
			b.Fatal(err)
		}
		for _, to := range lifecycle {
			next, err := inst.Transition(to, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.UpdateInstance(ctx, inst.Status, next); err != nil {
				b.Fatal(err)
			}
			inst = next
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(1+len(lifecycle))), "ns/write")
}

// BenchmarkMarkDelivery measures the webhook's dedupe write.
func BenchmarkMarkDelivery(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fresh, err := s.MarkDelivery(ctx, fmt.Sprintf("delivery-%d", i), time.Hour); err != nil || !fresh {
			b.Fatalf("MarkDelivery = %v, %v", fresh, err)
		}
	}
}

// BenchmarkListLiveInstances shows that listing reads the live index only:
// the cost with a long deleted history should match the cost without one.
func BenchmarkListLiveInstances(b *testing.B) {
	const live = 50
	for _, history := range []int{0, 500} {
		b.Run(fmt.Sprintf("live=%d/deleted=%d", live, history), func(b *testing.B) {
			ctx := context.Background()
			s, _ := openTemp(b)
			for i := 0; i < live+history; i++ {
				inst := pendingInstance("bench", int64(i))
				if err := s.CreateInstance(ctx, inst, 1<<30); err != nil {
					b.Fatal(err)
				}
				if i >= live {
					for _, to := range []runner.Status{runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted} {
						next, _ := inst.Transition(to, time.Now())
						if err := s.UpdateInstance(ctx, inst.Status, next); err != nil {
							b.Fatal(err)
						}
						inst = next
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := s.ListLiveInstances(ctx)
				if err != nil || len(got) != live {
					b.Fatalf("ListLiveInstances = %d, %v", len(got), err)
				}
			}
		})
	}
}
