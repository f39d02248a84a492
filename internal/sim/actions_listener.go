package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// The real scale-set listener (internal/listener, under internal/leader's
// lease) runs inside the simulated process as serve runs it: one task
// holding the lease and one listening, each giving the turn back at every
// store and Actions-service call, sleeping on the virtual clock.

// Intaker is a Controller that can take scale-set job events through the
// engine's intake port, which a listener needs.
type Intaker interface {
	Intake() engine.JobEventHandler
}

// startListener starts the process's listener once it is up, as serve
// starts its listeners after recovery. Its context ends when the process
// dies, before its tasks are unwound.
func (p *process) startListener(ctx context.Context) {
	w := p.w
	s := w.actions
	if s == nil {
		return
	}
	// Watched before anything can fail: a process that never listens
	// fails the restart invariant.
	s.watchRestart(p)
	in, ok := p.ctl.(Intaker)
	if !ok {
		return
	}
	pool, _ := w.pools.Get(ssPool)
	// As serve does on the store it owns alone: the dead process's lease
	// is freed rather than waited out.
	leases := &listenerStore{real: p.state.Store, sp: p.store}
	listener.FreeDeadLeases(ctx, leases, []string{ssPool}, w.now(), w.log)
	l, err := listener.New(listener.Options{
		Pool: *pool, ScaleSet: s.cfg.Name, Client: &actionsClient{s: s, p: p}, Intake: in.Intake(),
		Store: leases, Holder: fmt.Sprintf("sim-gen-%d", p.gen), ControllerID: controllerID,
		Runtime: simRuntime{p: p}, Rand: rand.New(rand.NewPCG(w.rng.Uint64(), 0x4c495354)), Logger: w.log,
		// One job after the other, in the listener's own task: a
		// goroutine the scheduler did not start would run outside it.
		FeedParallel: 1,
	})
	if err != nil {
		w.violate("the listener starts", "%v", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stops = append(p.stops, cancel)
	p.spawnCtx(ctx, "listener", func(ctx context.Context) {
		if err := l.Run(ctx); err != nil && !p.dead {
			w.violate("the listener starts", "Run: %v", err)
		}
	})
}

func (p *process) spawnCtx(parent context.Context, name string, fn func(ctx context.Context)) {
	p.w.sched.spawnCtx(parent, name, p.gen, p.holding(fn))
}

// simRuntime is leader.Runtime on the virtual clock and the scheduler.
// Its sleeps do not end early when their context ends (nothing wakes a
// parked task but its time); every caller looks again on waking.
type simRuntime struct{ p *process }

var _ leader.Runtime = simRuntime{}

func (r simRuntime) Now() time.Time { return r.p.w.now() }

func (r simRuntime) Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if err := r.p.sleep(ctx, d); err != nil {
		return false
	}
	return ctx.Err() == nil
}

func (r simRuntime) Go(ctx context.Context, fn func(ctx context.Context)) {
	r.p.spawnCtx(ctx, "listener-work", fn)
}

// listenerStore is the listener's store: the lease and the cursor are
// writes with the process's crash points, reads give the turn back.
// Only the listener goes through it, so that the engine's own cursor
// calls stay as they were.
type listenerStore struct {
	real store.Store
	sp   *storePort
}

var _ listener.Store = (*listenerStore)(nil)

func (s *listenerStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	var out *runner.Lease
	err := s.sp.write(ctx, "acquire_lease "+name+" "+holder, false, func() error {
		var err error
		out, err = s.real.AcquireLease(ctx, name, holder, ttl, now)
		return err
	})
	return out, err
}

func (s *listenerStore) RenewLease(ctx context.Context, held *runner.Lease, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	var out *runner.Lease
	err := s.sp.write(ctx, "renew_lease "+held.Name+" "+held.Holder, false, func() error {
		var err error
		out, err = s.real.RenewLease(ctx, held, ttl, now)
		return err
	})
	return out, err
}

func (s *listenerStore) ReleaseLease(ctx context.Context, held *runner.Lease) error {
	return s.sp.write(ctx, "release_lease "+held.Name+" "+held.Holder, false, func() error { return s.real.ReleaseLease(ctx, held) })
}

func (s *listenerStore) GetLease(ctx context.Context, name string) (*runner.Lease, error) {
	if err := s.sp.read(ctx); err != nil {
		return nil, err
	}
	return s.real.GetLease(ctx, name)
}

func (s *listenerStore) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	if err := s.sp.read(ctx); err != nil {
		return nil, err
	}
	return s.real.GetCursor(ctx, name)
}

func (s *listenerStore) PutCursor(ctx context.Context, next *store.Cursor) error {
	return s.sp.write(ctx, "put_cursor "+next.Name+" "+next.Value, false, func() error { return s.real.PutCursor(ctx, next) })
}

func (s *listenerStore) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	return s.sp.ListOpenJobs(ctx)
}

// restartWatch is what a restarted process's listener owes: polling again
// soon after it could — once the process is up, the dead process's lease
// has expired and the scale set's old session is resumable (its id is in
// the listener's stored state) or has expired.
type restartWatch struct {
	gen int
	// from is when the listener could first poll; faulted says an
	// Actions-service fault was injected since the process came up.
	from    time.Time
	faulted bool
	// conflict: a live session this process has no id of held the scale
	// set at the restart; the listener waits it out with backoff.
	conflict bool
}

// ssRestartBound is how soon after its restart a listener must poll (the
// issue's 60 s); ssRestartBoundConflict, after an orphan session it had
// to wait out expired: a minute, and one more backoff step at most (a 409
// just before the old session expired waits BackoffMax).
// ssRestartBoundFaulted bounds it whatever faults were injected
// meanwhile.
const (
	ssRestartBound         = time.Minute
	ssRestartBoundConflict = time.Minute + listener.DefaultBackoffMax
	ssRestartBoundFaulted  = 10 * time.Minute
)

// watchRestart starts the watch for process p's listener.
func (s *actionsService) watchRestart(p *process) {
	w := s.w
	// The dead process's lease is no excuse: the start frees it, as serve
	// does (listener.FreeDeadLeases). A live session this process has no
	// id of is: GitHub refuses a new one until it expires.
	from, conflict := w.now(), false
	if set := s.live(); set != nil && s.sessionLive(set.session) && set.session.id != s.storedSession(p) {
		if exp := set.session.lastActive.Add(ssSessionTTL); exp.After(from) {
			from, conflict = exp, true
		}
	}
	s.watch = &restartWatch{gen: p.gen, from: from, conflict: conflict}
}

// storedSession is the session id the listener's state holds (read from
// the store as the listener wrote it, without giving the turn back).
func (s *actionsService) storedSession(p *process) string {
	c, err := p.state.Store.GetCursor(context.Background(), "scaleset/"+ssPool)
	if err != nil || c.Value == "" {
		return ""
	}
	var st struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(c.Value), &st)
	return st.SessionID
}

// watchFault notes an injected fault for the restart watch.
func (s *actionsService) watchFault() {
	if s.watch != nil {
		s.watch.faulted = true
	}
}

// checkRestart fails a restarted listener that has not polled within its
// bound.
func (s *actionsService) checkRestart() {
	wt := s.watch
	p := s.w.proc
	if wt == nil || p == nil || p.gen != wt.gen || p.dead {
		return
	}
	bound := ssRestartBound
	if wt.conflict {
		bound = ssRestartBoundConflict
	}
	if wt.faulted {
		bound = ssRestartBoundFaulted
	}
	if late := s.w.now().Sub(wt.from); late > bound {
		s.watch = nil
		s.w.violate("a restarted listener polls again soon after it can", "gen %d's listener has not polled %s after it could (faults injected meanwhile: %v)", wt.gen, late.Round(time.Second), wt.faulted)
	}
}

// pollBegins checks that no other task polls the scale set, and settles
// the restart watch.
func (s *actionsService) pollBegins(t *task, p *process) {
	w := s.w
	if s.poller != nil && s.poller != t {
		w.violate("never two pollers for one scale set at once", "task %s (gen %d) polls while task %s (gen %d) does", t.name, t.gen, s.poller.name, s.poller.gen)
	}
	s.poller = t
	if wt := s.watch; wt != nil && wt.gen == p.gen {
		wait := max(w.now().Sub(wt.from), 0)
		w.stats.inc("scaleset.restart_polling_again_" + waitBucket(wait))
		s.watch = nil
	}
}

func (s *actionsService) pollEnds(t *task) {
	if s.poller == t {
		s.poller = nil
	}
}

// waitBucket words how long a restarted listener took to poll, for the
// figures.
func waitBucket(d time.Duration) string {
	switch {
	case d <= 0:
		return "at_once"
	case d <= 10*time.Second:
		return "within_10s"
	case d <= time.Minute:
		return "within_60s"
	case d <= ssRestartBound:
		return "within_2m"
	}
	return "over_2m"
}
