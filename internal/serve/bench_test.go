package serve

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/webhook"
)

// createWait bounds how long a benchmark waits for provider creates; only a
// broken build comes near it.
const createWait = 30 * time.Second

// BenchmarkWebhookToProviderCreate posts one signed queued webhook at a time
// to embedded mode over loopback HTTP and measures from just before the POST
// to the provider's CreateInstance call (which may come before the 2xx
// answer: the worker is woken while the intake's queue commit syncs).
// Webhooks follow each other as soon as the previous job reached the
// provider, so each one still overlaps the previous job's last writes.
func BenchmarkWebhookToProviderCreate(b *testing.B) {
	s := startBenchServe(b, benchServeOptions{})
	payload := loadQueuedPayload(b)
	var toCreate, toAnswer []time.Duration
	var job int64
	b.ReportAllocs()
	for b.Loop() {
		job++
		start := time.Now()
		if err := s.postJob(payload, job); err != nil {
			b.Fatal(err)
		}
		answered := time.Since(start)
		at, err := s.creates.createdAt(enginetest.InstanceName(job), createWait)
		if err != nil {
			b.Fatal(err)
		}
		toCreate = append(toCreate, at.Sub(start))
		toAnswer = append(toAnswer, answered)
	}
	slices.Sort(toCreate)
	slices.Sort(toAnswer)
	b.ReportMetric(percentileMS(toCreate, 0.50), "create-p50-ms")
	b.ReportMetric(percentileMS(toCreate, 0.99), "create-p99-ms")
	b.ReportMetric(percentileMS(toCreate, 1), "create-max-ms")
	b.ReportMetric(percentileMS(toAnswer, 0.50), "answer-p50-ms")
	b.ReportMetric(percentileMS(toAnswer, 0.99), "answer-p99-ms")
}

// intakeClients is how many concurrent senders the throughput benchmarks
// use, GitHub's many deliveries at once.
const intakeClients = 16

// BenchmarkSignedWebhookIntake measures signed deliveries answered per
// second by concurrent clients:
//   - queued: distinct queued jobs with the workers running, as deployed
//     (each webhook records the job and admits its instance with its
//     create message in one write, while the workers create the
//     instances alongside);
//   - queued-no-workers: the same with no consumers, intake alone;
//   - signature-only: the same signed 8.6 KB body as a ping, which is
//     verified and answered without touching the store: HTTP plus HMAC.
func BenchmarkSignedWebhookIntake(b *testing.B) {
	payload := loadQueuedPayload(b)
	cases := []struct {
		name  string
		event string
		opts  benchServeOptions
	}{
		{"queued", webhook.EventWorkflowJob, benchServeOptions{}},
		{"queued-no-workers", webhook.EventWorkflowJob, benchServeOptions{noWorkers: true}},
		{"signature-only", webhook.EventPing, benchServeOptions{noWorkers: true}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := startBenchServe(b, c.opts)
			var next atomic.Int64
			b.SetParallelism(max(1, intakeClients/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					job := next.Add(1)
					if err := s.post(c.event, payload.forJob(job), "bench-"+strconv.FormatInt(job, 10)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "webhooks/s")
		})
	}
}

// burstJobs is the size of one burst.
const burstJobs = 1000

// BenchmarkBurst1000 posts 1,000 distinct queued jobs from 16 concurrent
// clients and waits until the provider's create was called for every one.
// One op is one whole burst; the pool keeps growing from burst to burst.
// cpu-ms/job is this process's CPU (server and clients together) per job.
// A second create for any instance fails the benchmark: that is a
// correctness check, not a timing one.
func BenchmarkBurst1000(b *testing.B) {
	s := startBenchServe(b, benchServeOptions{})
	payload := loadQueuedPayload(b)
	var (
		last      int64 // the highest job id posted so far
		perJob    []time.Duration
		cpuBefore = processCPU(b)
	)
	b.ReportAllocs()
	for b.Loop() {
		first := last + 1
		last += burstJobs
		starts := make([]time.Time, burstJobs)
		if err := sendBurst(s, payload, first, starts); err != nil {
			b.Fatal(err)
		}
		want := int(last)
		if err := s.creates.await(createWait, func() bool { return len(s.creates.calls) >= want }); err != nil {
			b.Fatal(err)
		}
		s.creates.mu.Lock()
		for i, start := range starts {
			perJob = append(perJob, s.creates.firstAt[enginetest.InstanceName(first+int64(i))].Sub(start))
		}
		s.creates.mu.Unlock()
	}
	cpu := processCPU(b) - cpuBefore
	jobs := float64(b.N * burstJobs)
	b.ReportMetric(jobs/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/jobs, "cpu-ms/job")
	slices.Sort(perJob)
	b.ReportMetric(percentileMS(perJob, 0.50), "post-to-create-p50-ms")
	b.ReportMetric(percentileMS(perJob, 0.99), "post-to-create-p99-ms")
	if got := s.creates.distinct(); got != int(last) {
		b.Fatalf("provider creates were called for %d instances, want exactly %d (one per job)", got, last)
	}
	if dup := s.creates.duplicates(); len(dup) > 0 {
		b.Fatalf("duplicate provider creates: %v", dup)
	}
}

// sendBurst posts len(starts) queued jobs, ids from first on, from
// intakeClients goroutines, noting when each POST started.
func sendBurst(s *benchServe, payload *queuedPayload, first int64, starts []time.Time) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		errOnce  sync.Once
	)
	for range intakeClients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(starts)) {
					return
				}
				starts[i] = time.Now()
				if err := s.postJob(payload, first+i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// processCPU is the user plus system CPU this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
