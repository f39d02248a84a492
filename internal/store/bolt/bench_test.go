package bolt_test

import (
	"context"
	"fmt"
	"sync/atomic"
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

// BenchmarkConcurrentLifecycles is BenchmarkCreateAndTransition with 16
// jobs at a time, as a burst runs them: concurrent writes share commits.
// ns/op is per job life (six writes); writes/commit is the group size.
func BenchmarkConcurrentLifecycles(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	var next atomic.Int64
	before := s.CommitStats()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			inst := pendingInstance("bench", next.Add(1))
			if err := s.CreateInstance(ctx, inst, 1<<30); err != nil {
				b.Error(err)
				return
			}
			for _, to := range lifecycle {
				n, err := inst.Transition(to, time.Now())
				if err != nil {
					b.Error(err)
					return
				}
				if err := s.UpdateInstance(ctx, inst.Status, n); err != nil {
					b.Error(err)
					return
				}
				inst = n
			}
		}
	})
	b.StopTimer()
	after := s.CommitStats()
	commits, writes := after.Commits-before.Commits, after.Writes-before.Writes
	b.ReportMetric(float64(writes)/float64(max(commits, 1)), "writes/commit")
}
