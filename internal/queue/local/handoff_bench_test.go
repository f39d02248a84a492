package local

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// BenchmarkHandoffToBlockedReceive measures what the product promises: from
// Send being called to a Receive that was already blocked returning the
// message. ns/op also counts Send's durable commit; handoff-p50/p99 are the
// latency the waiting worker sees.
func BenchmarkHandoffToBlockedReceive(b *testing.B) {
	q, err := Open(filepath.Join(b.TempDir(), "queue.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type arrival struct {
		msg queue.Message
		at  time.Time
	}
	arrivals := make(chan arrival)
	go func() {
		for ctx.Err() == nil {
			msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1, Wait: time.Minute})
			if err != nil || len(msgs) == 0 {
				continue
			}
			arrivals <- arrival{msgs[0], time.Now()}
		}
	}()

	latencies := make([]time.Duration, 0, b.N)
	body := []byte(`{"v":1,"kind":"create","instance":"pool-abc123"}`)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		waitForWaiter(q)
		b.StartTimer()

		sentAt := time.Now()
		if err := q.Send(ctx, body, 0); err != nil {
			b.Fatal(err)
		}
		got := <-arrivals
		latencies = append(latencies, got.at.Sub(sentAt))

		b.StopTimer()
		if err := q.Ack(ctx, got.msg); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "handoff-p50-ns")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds()), "handoff-p99-ns")
}

func waitForWaiter(q *Queue) {
	for {
		q.mu.Lock()
		n := len(q.waiters)
		q.mu.Unlock()
		if n > 0 {
			return
		}
		runtime.Gosched()
	}
}

// BenchmarkSendReceiveAck is one message's whole durable life with no
// receiver waiting: three committed transactions.
func BenchmarkSendReceiveAck(b *testing.B) {
	q, err := Open(filepath.Join(b.TempDir(), "queue.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	body := []byte(`{"v":1,"kind":"create","instance":"pool-abc123"}`)
	for b.Loop() {
		if err := q.Send(ctx, body, 0); err != nil {
			b.Fatal(err)
		}
		msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1})
		if err != nil || len(msgs) != 1 {
			b.Fatalf("Receive = %d messages, %v", len(msgs), err)
		}
		if err := q.Ack(ctx, msgs[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentSendReceiveAck is BenchmarkSendReceiveAck from 16
// goroutines at once: the three commits of each message share transactions
// with the others'. writes/commit is the group size.
func BenchmarkConcurrentSendReceiveAck(b *testing.B) {
	q, err := Open(filepath.Join(b.TempDir(), "queue.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	body := []byte(`{"v":1,"kind":"create","instance":"pool-abc123"}`)
	before := q.CommitStats()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.Send(ctx, body, 0); err != nil {
				b.Error(err)
				return
			}
			msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1, Wait: time.Second})
			if err != nil || len(msgs) != 1 {
				b.Errorf("Receive = %d messages, %v", len(msgs), err)
				return
			}
			if err := q.Ack(ctx, msgs[0]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	after := q.CommitStats()
	commits, writes := after.Commits-before.Commits, after.Writes-before.Writes
	b.ReportMetric(float64(writes)/float64(max(commits, 1)), "writes/commit")
}
