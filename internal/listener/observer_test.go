package listener_test

import (
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// countingObserver counts what a listener reports, by pool.
type countingObserver struct {
	mu                          sync.Mutex
	listening, polls, conflicts map[string]int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{listening: map[string]int{}, polls: map[string]int{}, conflicts: map[string]int{}}
}

func (o *countingObserver) ListenerListening(pool string) { o.add(o.listening, pool) }
func (o *countingObserver) ListenerPolled(pool string)    { o.add(o.polls, pool) }
func (o *countingObserver) ListenerSessionConflict(pool string) {
	o.add(o.conflicts, pool)
}

func (o *countingObserver) add(m map[string]int, pool string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m[pool]++
}

func (o *countingObserver) count(m map[string]int, pool string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m[pool]
}

// A listener says when it starts listening and counts every poll the
// Actions service answers: the empty ones (202) of a quiet queue, and the
// ones that bring a message.
func TestObserverHearsEveryAnsweredPoll(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	obs := newCountingObserver()
	r.observer = obs
	r.start("replica-1")
	r.w.WaitFor("empty polls answered", func() bool { return obs.count(obs.polls, pool().Name) >= 2 })
	if n := obs.count(obs.listening, pool().Name); n != 1 {
		t.Errorf("ListenerListening called %d times for one tenure, want 1", n)
	}
	before := obs.count(obs.polls, pool().Name)
	r.runJob(r.queue())
	if after := obs.count(obs.polls, pool().Name); after <= before {
		t.Errorf("polls %d after a job's messages, %d before: want more", after, before)
	}
	if n := obs.count(obs.conflicts, pool().Name); n != 0 {
		t.Errorf("%d session conflicts reported, none met", n)
	}
}

// A 409 on create (a dead listener's session GitHub has not expired) is
// reported every time it is met, and nothing counts as a poll until the
// listener has a session again.
func TestObserverHearsSessionConflicts(t *testing.T) {
	r := newRig(t, scalesettest.Options{SessionTTL: 2 * time.Second})
	r.crashedPredecessor(false)
	obs := newCountingObserver()
	r.observer = obs
	r.start("replica-2")
	r.w.WaitFor("a session conflict reported", func() bool { return obs.count(obs.conflicts, pool().Name) >= 1 })
	if n := obs.count(obs.polls, pool().Name); n != 0 {
		t.Errorf("%d polls reported while the session was refused, want 0", n)
	}
	r.w.WaitFor("polls answered once the stale session expired", func() bool { return obs.count(obs.polls, pool().Name) >= 1 })
	met := r.fake.CountStatus(scalesettest.OpCreateSession, 409)
	if got := obs.count(obs.conflicts, pool().Name); got != met {
		t.Errorf("%d conflicts reported, the fake refused %d creates", got, met)
	}
}
