package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testclock"
)

func openQueued(t *testing.T, path string) *bolt.QueuedStore {
	t.Helper()
	s, err := bolt.OpenWithQueue(path, local.Options{})
	if err != nil {
		t.Fatalf("OpenWithQueue: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContractWithQueue(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openQueued(t, filepath.Join(t.TempDir(), "state.db"))
	})
}

func TestOutboxContract(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T) (storetest.OutboxStore, queue.Queue) {
		s := openQueued(t, filepath.Join(t.TempDir(), "state.db"))
		return s, s.Queue()
	})
}

// What CreateInstanceAndSend commits is on disk, every part of it, once it
// returns.
func TestOutboxSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := bolt.OpenWithQueue(path, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inst := pendingInstance("p", 1)
	job := openJob("p", 1, time.Now())
	if err := s.CreateInstanceAndSend(ctx, store.Admission{Instance: inst, MaxRunners: 5, Job: job}, []byte("create")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openQueued(t, path)
	if _, err := s.GetInstance(ctx, inst.Name); err != nil {
		t.Fatalf("GetInstance after restart: %v", err)
	}
	if n, err := s.PoolUsage(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("PoolUsage after restart = %d, %v; want 1", n, err)
	}
	if got, err := s.GetJob(ctx, job.Key()); err != nil || got.Version != 1 {
		t.Fatalf("GetJob after restart = %+v, %v; want the admitted job", got, err)
	}
	msgs, err := s.Queue().Receive(ctx, queue.ReceiveOptions{Max: 10, Wait: time.Second})
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "create" {
		t.Fatalf("Receive after restart = %d messages, %v; want the create", len(msgs), err)
	}
}

// The message is dated by the queue's clock, not the wall clock, so a queue
// on virtual time (the simulation's) sees it due at once.
func TestOutboxDatesMessagesByTheQueueClock(t *testing.T) {
	ctx := context.Background()
	virtual := testclock.At(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := bolt.OpenWithQueue(filepath.Join(t.TempDir(), "state.db"), local.Options{Now: virtual.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateInstanceAndSend(ctx, admit(pendingInstance("p", 1), 5), []byte("create")); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Queue().Receive(ctx, queue.ReceiveOptions{Max: 10})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive on the queue's clock = %d messages, %v; want the create, due at once", len(msgs), err)
	}
}
