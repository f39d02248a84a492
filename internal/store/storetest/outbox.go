package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// OutboxStore is a store with the optional store.Outbox capability, and the
// queue its messages land in.
type OutboxStore interface {
	store.Store
	store.Outbox
}

// RunOutbox checks store.Outbox's contract: CreateInstanceAndSend is
// CreateInstance, and its message is on q if and only if the admission
// (instance, slot, job) was written. newStore returns a fresh, empty store and its queue.
func RunOutbox(t *testing.T, newStore func(t *testing.T) (OutboxStore, queue.Queue)) {
	t.Helper()
	ctx := context.Background()
	t.Run("created instance comes with its message", func(t *testing.T) {
		s, q := newStore(t)
		inst := newInstance("p", 1)
		if err := s.CreateInstanceAndSend(ctx, admit(inst, 5), []byte("create 1")); err != nil {
			t.Fatalf("CreateInstanceAndSend: %v", err)
		}
		if inst.Version != 1 {
			t.Errorf("Version = %d, want 1", inst.Version)
		}
		if _, err := s.GetInstance(ctx, inst.Name); err != nil {
			t.Fatalf("GetInstance: %v", err)
		}
		if got := drain(t, q); len(got) != 1 || got[0] != "create 1" {
			t.Fatalf("queue holds %q, want [create 1]", got)
		}
	})

	t.Run("existing instance: no message", func(t *testing.T) {
		s, q := newStore(t)
		if err := s.CreateInstance(ctx, admit(newInstance("p", 1), 5)); err != nil {
			t.Fatal(err)
		}
		err := s.CreateInstanceAndSend(ctx, admit(newInstance("p", 1), 5), []byte("duplicate"))
		if !errors.Is(err, store.ErrAlreadyExists) {
			t.Fatalf("CreateInstanceAndSend of a taken name = %v, want ErrAlreadyExists", err)
		}
		if got := drain(t, q); len(got) != 0 {
			t.Fatalf("queue holds %q after a refused create, want nothing", got)
		}
	})

	t.Run("full pool: no message, no instance", func(t *testing.T) {
		s, q := newStore(t)
		if err := s.CreateInstanceAndSend(ctx, admit(newInstance("p", 1), 1), []byte("first")); err != nil {
			t.Fatal(err)
		}
		second := newInstance("p", 2)
		err := s.CreateInstanceAndSend(ctx, admit(second, 1), []byte("second"))
		if !errors.Is(err, store.ErrPoolFull) {
			t.Fatalf("CreateInstanceAndSend into a full pool = %v, want ErrPoolFull", err)
		}
		if _, err := s.GetInstance(ctx, second.Name); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetInstance of the refused instance = %v, want ErrNotFound", err)
		}
		if got := drain(t, q); len(got) != 1 || got[0] != "first" {
			t.Fatalf("queue holds %q, want only [first]", got)
		}
	})

	t.Run("admission with its job comes with its message", func(t *testing.T) {
		s, q := newStore(t)
		j := newJob("p", 1)
		mustCreateJob(t, s, j)
		inst, next := nextInstanceFor(j)
		a := store.Admission{Instance: inst, MaxRunners: 5, Job: next, JobFrom: runner.JobOpen}
		if err := s.CreateInstanceAndSend(ctx, a, []byte("serve 1")); err != nil {
			t.Fatalf("CreateInstanceAndSend: %v", err)
		}
		requireSameJob(t, next, mustGetJob(t, s, j.Key()))
		if got := drain(t, q); len(got) != 1 || got[0] != "serve 1" {
			t.Fatalf("queue holds %q, want [serve 1]", got)
		}
	})

	t.Run("stale job: no message, no instance", func(t *testing.T) {
		s, q := newStore(t)
		j := newJob("p", 1)
		mustCreateJob(t, s, j)
		mustMoveJob(t, s, j.Key(), runner.JobWaiting)
		inst, next := nextInstanceFor(j)
		a := store.Admission{Instance: inst, MaxRunners: 5, Job: next, JobFrom: runner.JobOpen}
		requireConflict(t, s.CreateInstanceAndSend(ctx, a, []byte("stale")), store.KindJob, j.Key(), runner.JobOpen, 1)
		requireNotFound(t, s, inst.Name)
		requireUsage(t, s, "p", 0)
		if got := drain(t, q); len(got) != 0 {
			t.Fatalf("queue holds %q after a refused admission, want nothing", got)
		}
	})

	t.Run("concurrent creates of one name: one message", func(t *testing.T) {
		s, q := newStore(t)
		const racers = 8
		errs := make(chan error, racers)
		for i := range racers {
			go func() {
				errs <- s.CreateInstanceAndSend(ctx, admit(newInstance("p", 7), 5), fmt.Appendf(nil, "racer %d", i))
			}()
		}
		created := 0
		for range racers {
			switch err := <-errs; {
			case err == nil:
				created++
			case !errors.Is(err, store.ErrAlreadyExists):
				t.Errorf("racer: %v", err)
			}
		}
		if got := drain(t, q); created != 1 || len(got) != 1 {
			t.Fatalf("%d racers created the instance and the queue holds %q; want 1 and 1 message", created, got)
		}
	})
}

// drain receives and acknowledges everything visible on q.
func drain(t *testing.T, q queue.Queue) []string {
	t.Helper()
	var bodies []string
	for {
		msgs, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 10})
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(msgs) == 0 {
			return bodies
		}
		for _, m := range msgs {
			bodies = append(bodies, string(m.Body))
			if err := q.Ack(context.Background(), m); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
	}
}
