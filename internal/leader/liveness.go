package leader

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

// LivenessTTL is how long a serve replica's liveness lease lasts after its
// last renewal: how long after its death the others know it is dead. A
// database restart of up to about two renewal periods (10 s) does not end
// a life. The simulation's replicas hold theirs with the same.
const LivenessTTL = 15 * time.Second

// livenessPrefix starts the name of every liveness lease. The store
// removes such a lease's record an hour after it lapsed (one life, one
// lease: nobody takes it again).
const livenessPrefix = store.LivenessLeasePrefix

// LivenessLease is the name of the lease that says holder is alive: a
// process that claims work (a serve replica's workers) names itself in
// the claim, and whoever finds the claim asks this lease whether its
// holder still lives (issue #32).
func LivenessLease(holder string) string { return livenessPrefix + holder }

// Liveness holds this process's liveness lease and tells the work it
// claims who it is and whether it is still alive. One lease per life: when
// the lease cannot be renewed in time (a database outage longer than the
// margin, a pause) the life ends — its work stops, the others take its
// claims over — and the next life holds a new lease under a new holder
// id, so that claims of the ended life never pass for live again.
type Liveness struct {
	o  Options
	mu sync.Mutex
	// holder and alive are the current life (alive ends with it); holder
	// is "" between lives.
	holder string
	alive  context.Context
	gen    int
}

// NewLiveness prepares a liveness for o.Holder with o.TTL (o.Name is
// ignored: each life's lease is LivenessLease of its holder id). The
// first life's holder id is o.Holder, later ones o.Holder~2, ~3 ….
func NewLiveness(o Options) (*Liveness, error) {
	o.Name = LivenessLease(o.Holder)
	if err := o.check(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(o.Holder, "@#") {
		return nil, fmt.Errorf("leader: holder %q must not contain '@' or '#' (claims carry it)", o.Holder)
	}
	return &Liveness{o: o}, nil
}

// Current is the life this process is in: the holder id its claims name
// and a context that ends when that life ends. ok is false between lives
// (the lease not yet taken, or lapsed and not taken again): claim nothing
// then.
func (l *Liveness) Current() (holder string, alive context.Context, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == "" || l.alive.Err() != nil {
		return "", nil, false
	}
	return l.holder, l.alive, true
}

// Run holds a liveness lease until ctx is done, then releases it. Cancel
// ctx only once the work that claimed under it has returned: the release
// tells the others every claim of this life is dead.
func (l *Liveness) Run(ctx context.Context) {
	for ctx.Err() == nil {
		o := l.o
		l.mu.Lock()
		l.gen++
		if l.gen > 1 {
			o.Holder = fmt.Sprintf("%s~%d", o.Holder, l.gen)
		}
		l.mu.Unlock()
		o.Name = LivenessLease(o.Holder)
		held := acquire(ctx, o)
		if held == nil {
			return
		}
		o.Logger.Info("liveness held: claims of this process name "+o.Holder, "lease", o.Name, "holder", o.Holder, "expires_at", held.ExpiresAt)
		hold(ctx, o, held, func(c context.Context) {
			l.set(o.Holder, c)
			// Waits through the Runtime, not on <-c.Done(): under the
			// simulation's runtime this is a task of its scheduler, which
			// must give the turn back (its sleeps end at their time, and
			// hold waits for this to return).
			for o.Runtime.Sleep(c, o.renewEvery()) {
			}
			l.set("", nil)
		})
		if ctx.Err() == nil {
			o.Logger.Warn("liveness lapsed: the work this life claimed stops and is taken over; a new life begins", "lease", o.Name, "holder", o.Holder)
		}
	}
}

func (l *Liveness) set(holder string, alive context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder, l.alive = holder, alive
}
