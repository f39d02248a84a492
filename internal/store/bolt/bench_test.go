package bolt_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
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
		if err := s.CreateInstance(ctx, admit(inst, 1<<30)); err != nil {
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

// BenchmarkJobAdmission measures the ledger's writes for one job served by
// its first runner: the job recorded with its instance in one admission,
// then served and closed.
func BenchmarkJobAdmission(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job := openJob("bench", int64(i+1), time.Now())
		job.Made, job.Instance = 1, job.InstanceFor(1)
		inst := pendingInstance("bench", int64(i+1))
		if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 1 << 30, Job: job}); err != nil {
			b.Fatal(err)
		}
		for _, to := range []runner.JobStatus{runner.JobServed, runner.JobClosed} {
			next, err := job.Transition(to, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.UpdateJob(ctx, job.Status, next); err != nil {
				b.Fatal(err)
			}
			job = next
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*3), "ns/write")
}

// BenchmarkListOpenJobs shows that listing reads the open index only: the
// cost with a long settled history should match the cost without one.
func BenchmarkListOpenJobs(b *testing.B) {
	const open = 50
	for _, history := range []int{0, 500} {
		b.Run(fmt.Sprintf("open=%d/settled=%d", open, history), func(b *testing.B) {
			ctx := context.Background()
			s, _ := openTemp(b, bolt.WithNoSync())
			for i := 0; i < open+history; i++ {
				job := openJob("bench", int64(i+1), time.Now())
				if err := s.CreateJob(ctx, job); err != nil {
					b.Fatal(err)
				}
				if i >= open {
					next, _ := job.Transition(runner.JobClosed, time.Now())
					if err := s.UpdateJob(ctx, runner.JobOpen, next); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := s.ListOpenJobs(ctx)
				if err != nil || len(got) != open {
					b.Fatalf("ListOpenJobs = %d, %v", len(got), err)
				}
			}
		})
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
				if err := s.CreateInstance(ctx, admit(inst, 1<<30)); err != nil {
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
			if err := s.CreateInstance(ctx, admit(inst, 1<<30)); err != nil {
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
