// Package listener feeds the engine from a runner scale set: one listener
// per scale-set pool, holding the store's lease for it so that two
// replicas never poll one session, long-polls the scale set's message
// queue through internal/github/scaleset, hands every job message to the
// engine's intake port, and acknowledges a message only once all of its
// events are in the ledger (at least once; the ledger is idempotent by
// job). Its session and lastMessageId live in the store, so a listener
// started after a crash resumes where its predecessor stopped.
package listener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Defaults for the zero Options.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = time.Minute
	// DefaultCloseTimeout bounds the session delete on the way out: it
	// runs on a context of its own, since the listener's is done by then.
	DefaultCloseTimeout = 10 * time.Second
	// DefaultStatsGrace outlasts a message in flight and GitHub's
	// re-assignment of a canceled assignment by far.
	DefaultStatsGrace = 2 * time.Minute
)

// Store is what a listener keeps in the store: its lease, its state, and
// a read of open demand for the statistics check.
type Store interface {
	store.Leases
	store.Cursors
	ListOpenJobs(ctx context.Context) ([]*runner.Job, error)
}

// Options configure one listener.
type Options struct {
	// Pool is the scale-set pool: its name, owner, labels and MaxRunners
	// (sent as X-ScaleSetMaxCapacity). Required.
	Pool runner.Pool
	// ScaleSet is the scale set's name, RunnerGroup its runner group
	// ("" = scaleset.DefaultRunnerGroup). ScaleSet is required.
	ScaleSet    string
	RunnerGroup string
	// Client speaks the scale-set protocol for the pool's owner. Required.
	Client Client
	// Intake is the engine's intake port. Required.
	Intake engine.JobEventHandler
	// Store keeps the lease and the state. Required.
	Store Store
	// Holder names this process (leader.HolderID()); it is also the
	// session's owner name GitHub shows. Required.
	Holder string
	// ControllerID is the installation's controller_id. Its ownership
	// label goes on the scale set, so that the scale set's runners carry
	// it in GitHub's runner list, where the engine's reconciler tells its
	// own runners (online, busy) by it.
	ControllerID string
	// LeaseTTL: how long a dead listener's successor waits for the lease.
	LeaseTTL time.Duration
	// BackoffMin and BackoffMax bound the wait after a failure, doubling
	// in between; a session conflict waits the same way.
	BackoffMin, BackoffMax time.Duration
	CloseTimeout           time.Duration
	// StatsGrace is how long the ledger must hold more waiting jobs than
	// GitHub counts before the excess is closed (checkStatistics).
	StatsGrace time.Duration
	// KeepSession leaves the message session open on the way out, its id
	// stored, for the next listener to resume instead of opening a new
	// one. A listener that stops on a schedule (the Lambda function, at
	// the end of each invocation) sets it: its successor starts moments
	// later, and resuming costs it neither a new session nor a 409. A
	// process that stops for good leaves it unset and deletes the session.
	KeepSession bool
	// FeedParallel is how many of a message's jobs go to the ledger at
	// once (default DefaultFeedParallel); 1 feeds them one after the
	// other in the listener's own goroutine.
	FeedParallel int
	// Observer hears each tenure's start, the polls answered and the
	// session conflicts, which tell a listener that hears nothing from a
	// listening one (nil: nobody).
	Observer Observer
	Logger   *slog.Logger
	// Runtime is the clock, timers and goroutines of the listener and its
	// lease (leader.RealRuntime when nil); Rand draws the backoff's
	// jitter (a generator seeded from the machine when nil). The fault
	// simulation sets both, to run the listener on its virtual clock and
	// replay a seed exactly.
	Runtime leader.Runtime
	Rand    *rand.Rand
}

// Listener is one scale-set pool's listener.
type Listener struct {
	o     Options
	log   *slog.Logger
	state stateStore
	stats statsView
}

// New checks o and returns its listener.
func New(o Options) (*Listener, error) {
	switch {
	case o.Pool.Name == "" || o.ScaleSet == "":
		return nil, errors.New("listener: a pool and its scale set's name are required")
	case o.Client == nil || o.Intake == nil || o.Store == nil || o.Holder == "":
		return nil, errors.New("listener: Client, Intake, Store and Holder are required")
	}
	if o.RunnerGroup == "" {
		o.RunnerGroup = scaleset.DefaultRunnerGroup
	}
	o.LeaseTTL = orDefault(o.LeaseTTL, DefaultLeaseTTL)
	o.BackoffMin = orDefault(o.BackoffMin, DefaultBackoffMin)
	o.BackoffMax = orDefault(o.BackoffMax, DefaultBackoffMax)
	o.CloseTimeout = orDefault(o.CloseTimeout, DefaultCloseTimeout)
	o.StatsGrace = orDefault(o.StatsGrace, DefaultStatsGrace)
	if o.FeedParallel <= 0 {
		o.FeedParallel = DefaultFeedParallel
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Runtime == nil {
		o.Runtime = leader.RealRuntime{}
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	l := &Listener{o: o, state: stateStore{cursors: o.Store, name: cursorName(o.Pool.Name)}}
	l.log = o.Logger.With("pool", o.Pool.Name, "scale_set", o.ScaleSet)
	return l, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// LeaseName is the store lease a pool's listener holds.
func LeaseName(pool string) string { return "listener/" + pool }

// Run listens while this process holds the pool's lease, until ctx ends.
// It never returns on a GitHub failure: every one is waited out (see
// listen), so a fault never becomes a crash loop.
func (l *Listener) Run(ctx context.Context) error {
	return leader.Run(ctx, leader.Options{
		Leases: l.o.Store, Name: LeaseName(l.o.Pool.Name), Holder: l.o.Holder,
		TTL: l.o.LeaseTTL, Logger: l.log, Runtime: l.o.Runtime,
	}, l.listen)
}

// listen is one tenure under the lease: it polls until ctx ends (lease
// lost or shutdown), then deletes its session on a context of its own.
func (l *Listener) listen(ctx context.Context) {
	wait := backoff{min: l.o.BackoffMin, max: l.o.BackoffMax, rand: l.o.Rand}
	l.o.Observer.ListenerListening(l.o.Pool.Name)
	st, err := l.state.load(ctx)
	switch {
	case errors.Is(err, errUnreadableState):
		l.log.ErrorContext(ctx, "listening from a new session and the start of the queue", "error", err)
	case err != nil:
		// Without the cursor's version no state could be saved: give the
		// lease back and try again (leader.Run takes it again).
		l.waitAfter(ctx, err, &wait, "listener state not read")
		return
	}
	var sess Session
	defer func() { l.closeSession(ctx, sess, &st) }()
	for ctx.Err() == nil {
		if sess == nil {
			if sess, err = l.open(ctx, &st); err != nil {
				if errors.Is(err, scaleset.ErrSessionConflict) {
					l.o.Observer.ListenerSessionConflict(l.o.Pool.Name)
				}
				l.waitAfter(ctx, err, &wait, "no message session")
				continue
			}
			l.heardFromSession(sess)
		}
		msg, err := sess.GetMessage(ctx, st.LastMessageID, l.o.Pool.MaxRunners)
		if err != nil {
			if l.lostSession(ctx, err, &st) {
				sess = nil
				continue
			}
			l.waitAfter(ctx, err, &wait, "poll failed")
			continue
		}
		l.o.Observer.ListenerPolled(l.o.Pool.Name)
		if msg == nil {
			// The poll window passed with nothing (202): every event
			// GitHub's last statistics counted is in the ledger now.
			wait.reset()
			l.checkStatistics(ctx, l.log.With("scale_set_id", sess.ScaleSetID(), "session_id", sess.ID()), nil, sess.ScaleSetID())
			continue
		}
		if err := l.handle(ctx, sess, msg, &st); err != nil {
			if l.lostSession(ctx, err, &st) {
				sess = nil // the ack or an acquire met the loss first
				continue
			}
			l.waitAfter(ctx, err, &wait, "message not acknowledged; it comes again")
			continue
		}
		wait.reset()
	}
}

// lostSession reports whether err means the session is gone, and updates
// st for the next one: a session GitHub dropped, or whose token it will
// not renew, is replaced keeping lastMessageId; a deleted scale set is
// ensured again, and if GitHub made it anew (a new id, a new queue)
// lastMessageId starts over (open).
func (l *Listener) lostSession(ctx context.Context, err error, st *state) bool {
	switch {
	case errors.Is(err, scaleset.ErrScaleSetNotFound):
		// open ensures it again and starts the queue over if it is a new
		// one (a new id); the same id keeps lastMessageId.
		l.log.WarnContext(ctx, "scale set deleted by GitHub; ensuring it again", "scale_set_id", st.ScaleSetID, "error", err)
		st.SessionID = ""
		return true
	case errors.Is(err, scaleset.ErrSessionNotFound), errors.Is(err, scaleset.ErrQueueTokenExpired):
		l.log.WarnContext(ctx, "message session lost; opening a new one", "session_id", st.SessionID, "error", err)
		st.SessionID = ""
		return true
	}
	return false
}

// closeSession deletes the session on every way out, so a successor need
// not wait for GitHub to expire it, and forgets it in the store; with
// KeepSession it leaves the session for the successor to resume. It runs
// on ctx's values without its cancellation: ctx is done by then.
func (l *Listener) closeSession(ctx context.Context, sess Session, st *state) {
	if sess == nil {
		return
	}
	if l.o.KeepSession {
		// The id was saved when the session was opened; lastMessageId
		// after each ack.
		l.log.Info("message session kept for the next listener to resume", "session_id", sess.ID(), "last_message_id", st.LastMessageID)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.o.CloseTimeout)
	defer cancel()
	if err := sess.Close(ctx); err != nil {
		// The session id stays stored: a successor resumes it, or GitHub
		// expires it.
		l.log.Warn("message session not deleted", "session_id", sess.ID(), "error", err)
		return
	}
	st.SessionID = ""
	if err := l.state.save(ctx, *st); err != nil {
		l.log.Warn("listener state not saved after the session was deleted", "error", err)
	}
	l.log.Info("message session deleted", "session_id", sess.ID())
}

// waitAfter logs a failure and waits before the next try: until a rate
// limit's reset, else the next backoff step.
func (l *Listener) waitAfter(ctx context.Context, err error, wait *backoff, what string) {
	if ctx.Err() != nil {
		return
	}
	d := wait.next()
	if at, ok := retryAt(err); ok {
		d = max(at.Sub(l.o.Runtime.Now()), l.o.BackoffMin)
	}
	level := slog.LevelWarn
	if errors.Is(err, scaleset.ErrUnauthorized) || errors.Is(err, scaleset.ErrRunnerGroupNotFound) {
		level = slog.LevelError // an operator must act; retrying slowly costs nothing
	}
	l.log.Log(ctx, level, fmt.Sprintf("scale-set listener: %s; retrying", what), "error", err, "retry_in", d)
	l.o.Runtime.Sleep(ctx, d)
}
