package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

// The scheduler runs the simulation as one thread of control over many
// tasks. A task is a goroutine (a webhook intake, a queue worker, a
// reconcile pass, a restart's recovery) that runs only while the scheduler
// has handed it the turn, and gives the turn back at every port call (store,
// queue, GitHub, provider) by parking. Which parked task runs next is the
// seeded generator's choice, so concurrent work interleaves as it could in
// production — a worker's read and its compare-and-set can be split by
// another worker's write — yet a seed replays exactly. Virtual time moves
// only when no task can run: the clock jumps to the next event (a
// delivery, a timer, the end of a task's simulated call latency).

// errKilled is what a port call of a task returns once the process the task
// belonged to has died.
var errKilled = errors.New("sim: the runfleet process died")

// realTurnLimit bounds how long a task may keep the turn in real time. It
// catches an engine that loops without calling a port; it is a hang
// detector, not a timing assertion.
const realTurnLimit = 2 * time.Minute

type task struct {
	name string
	// gen is the process generation the task belongs to; 0 is the outside
	// world, which never dies.
	gen    int
	resume chan bool
	killed bool
	done   bool
	// panicked carries a panic out of the task's goroutine.
	panicked any
	stack    []byte
}

type taskKey struct{}

func taskOf(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

type event struct {
	at  time.Time
	seq uint64
	// gen > 0 ties the event to a process generation: it is dropped if that
	// process has died by then.
	gen  int
	fn   func()
	wake *task
	// over: a nap's wake that has happened (or been cut short by nap.wake).
	over bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type scheduler struct {
	clock  *testclock.Clock
	rng    *rand.Rand
	events eventHeap
	seq    uint64
	ready  []*task
	// live lists unfinished tasks in spawn order, for kill.
	live []*task
	back chan struct{}
	// genAlive says whether events of a generation still apply.
	genAlive func(gen int) bool
	// stuck is a task that never gave the turn back: nothing can be
	// resumed safely after it.
	stuck *task
	// current is the task that has the turn, nil between turns.
	current *task
}

func newScheduler(clock *testclock.Clock, rng *rand.Rand) *scheduler {
	return &scheduler{clock: clock, rng: rng, back: make(chan struct{}), genAlive: func(int) bool { return true }}
}

// at runs fn on the scheduler's goroutine at virtual time t (not before
// now), unless gen > 0 and that process is dead by then.
func (s *scheduler) at(t time.Time, gen int, fn func()) {
	if now := s.clock.Now(); t.Before(now) {
		t = now
	}
	s.seq++
	heap.Push(&s.events, &event{at: t, seq: s.seq, gen: gen, fn: fn})
}

func (s *scheduler) after(d time.Duration, gen int, fn func()) {
	s.at(s.clock.Now().Add(d), gen, fn)
}

// spawn starts a task; it first runs when the scheduler picks it.
func (s *scheduler) spawn(name string, gen int, fn func(ctx context.Context)) {
	s.spawnCtx(context.Background(), name, gen, fn)
}

// spawnCtx is spawn with the task's context derived from parent (its
// values and cancellation; the task is its own).
func (s *scheduler) spawnCtx(parent context.Context, name string, gen int, fn func(ctx context.Context)) {
	t := &task{name: name, gen: gen, resume: make(chan bool)}
	ctx := context.WithValue(parent, taskKey{}, t)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				t.panicked, t.stack = r, debug.Stack()
			}
			t.done = true
			s.back <- struct{}{}
		}()
		if ok := <-t.resume; ok {
			fn(ctx)
		}
	}()
	s.live = append(s.live, t)
	s.ready = append(s.ready, t)
}

// yield gives the turn back from inside a task; it returns when the task is
// picked again, or errKilled if its process died meanwhile.
func (s *scheduler) yield(ctx context.Context) error {
	t := s.mustTask(ctx)
	if t.killed {
		return errKilled
	}
	s.ready = append(s.ready, t)
	return s.park(t)
}

// sleep parks the task for d of virtual time: a call's latency, or a hung
// call's wait for its caller's timeout. Other tasks and events run meanwhile.
func (s *scheduler) sleep(ctx context.Context, d time.Duration) error {
	t := s.mustTask(ctx)
	if t.killed {
		return errKilled
	}
	s.seq++
	heap.Push(&s.events, &event{at: s.clock.Now().Add(max(d, 0)), seq: s.seq, wake: t})
	return s.park(t)
}

// nap is a sleep that something else may end early: a long poll that a
// new message wakes.
type nap struct {
	s  *scheduler
	ev *event
}

// napFor parks the task for at most d; hold (called before it parks)
// keeps the nap for whoever may end it early.
func (s *scheduler) napFor(ctx context.Context, d time.Duration, hold func(*nap)) error {
	t := s.mustTask(ctx)
	if t.killed {
		return errKilled
	}
	s.seq++
	ev := &event{at: s.clock.Now().Add(max(d, 0)), seq: s.seq, wake: t}
	heap.Push(&s.events, ev)
	hold(&nap{s: s, ev: ev})
	return s.park(t)
}

// wake ends the nap now, unless it is over already (or its task gone).
func (n *nap) wake() {
	t := n.ev.wake
	if n.ev.over || t.done || t.killed {
		return
	}
	n.ev.over = true
	n.s.ready = append(n.s.ready, t)
}

func (s *scheduler) park(t *task) error {
	s.back <- struct{}{}
	if ok := <-t.resume; !ok {
		return errKilled
	}
	return nil
}

// who names the task that has the turn ("" between turns), for the trace.
func (s *scheduler) who() string {
	if s.current == nil {
		return ""
	}
	return s.current.name
}

func (s *scheduler) mustTask(ctx context.Context) *task {
	t := taskOf(ctx)
	if t == nil {
		panic("sim: a port was called with a context that does not descend from the task's: the engine dropped its caller's context")
	}
	return t
}

// run gives the turn to t until it parks or ends, and reports a panic in
// it as the simulation's own.
func (s *scheduler) run(t *task, ok bool) {
	s.current = t
	defer func() { s.current = nil }()
	t.resume <- ok
	select {
	case <-s.back:
	case <-time.After(realTurnLimit):
		s.stuck = t
		panic(fmt.Sprintf("sim: task %s kept the turn for %s of real time without calling a port: a loop that never yields", t.name, realTurnLimit))
	}
	if t.done {
		s.forget(t)
		if t.panicked != nil {
			panic(fmt.Sprintf("sim: task %s panicked: %v\n%s", t.name, t.panicked, t.stack))
		}
	}
}

func (s *scheduler) forget(t *task) {
	for i, l := range s.live {
		if l == t {
			s.live = append(s.live[:i], s.live[i+1:]...)
			return
		}
	}
}

// step runs one ready task (chosen by the generator) or, when none is
// ready, the next event, moving the clock to it. It reports false when
// there is nothing left to do at all.
func (s *scheduler) step() bool {
	if n := len(s.ready); n > 0 {
		i := s.rng.IntN(n)
		t := s.ready[i]
		s.ready = append(s.ready[:i], s.ready[i+1:]...)
		s.run(t, !t.killed)
		return true
	}
	for s.events.Len() > 0 {
		ev := heap.Pop(&s.events).(*event)
		s.clock.AdvanceTo(ev.at)
		switch {
		case ev.wake != nil:
			if ev.wake.done || ev.over {
				continue
			}
			ev.over = true
			s.ready = append(s.ready, ev.wake)
		case ev.gen > 0 && !s.genAlive(ev.gen):
			continue
		default:
			ev.fn()
		}
		return true
	}
	return false
}

// nextEventAt is when the next event is due, if any.
func (s *scheduler) nextEventAt() (time.Time, bool) {
	if s.events.Len() == 0 {
		return time.Time{}, false
	}
	return s.events[0].at, true
}

// kill ends every task of generation gen: each is resumed once with the
// news, every port call it makes from then on fails with errKilled, and it
// runs to its end before kill returns.
func (s *scheduler) kill(gen int) {
	if s.stuck != nil {
		return
	}
	var victims []*task
	for _, t := range s.live {
		if t.gen == gen && !t.done {
			victims = append(victims, t)
		}
	}
	for _, t := range victims {
		t.killed = true
	}
	kept := s.ready[:0]
	for _, t := range s.ready {
		if !t.killed {
			kept = append(kept, t)
		}
	}
	s.ready = kept
	for _, t := range victims {
		s.run(t, false)
		if !t.done {
			panic(fmt.Sprintf("sim: task %s parked after its process died", t.name))
		}
	}
}
