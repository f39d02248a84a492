package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/leader"
)

// A replica's liveness (issue #32). Each serve replica on a shared store
// holds a lease leader.LivenessLease(holder), renewed every TTL/3; its
// workers' claims name the holder; every replica scans for claims whose
// holder's lease has lapsed (or whose ClaimUntil has passed) every
// takeoverScanInterval and takes that work over at once. A replica that
// cannot renew stops its work in hand a margin (TTL/6) before its lease
// expires, so the takeover never overlaps it.
const (
	// livenessTTL: how long after its last renewal a replica's death is
	// known. A database restart of up to about two renewal periods (10 s)
	// does not end a life.
	livenessTTL = leader.LivenessTTL
	// takeoverScanInterval: how often each replica looks for dead work.
	takeoverScanInterval = engine.DeadWorkScanInterval
)

// deadWorkTaker is the engine's scan of dead work.
type deadWorkTaker interface {
	TakeOverDeadWork(ctx context.Context) (int, error)
}

// startLiveness starts this replica's liveness and returns it with the
// function that ends it, to call once the workers have returned (the
// release tells the others every claim of this process is dead). Nil
// without replicas.
func (r *replica) startLiveness(log *slog.Logger) (*leader.Liveness, func()) {
	if r == nil {
		return nil, func() {}
	}
	l, err := leader.NewLiveness(leader.Options{Leases: r.leases, Holder: r.holder, TTL: livenessTTL, Logger: log})
	if err != nil {
		log.Error("cannot hold a liveness record; a death of this replica is known only from its messages' visibility", "error", err)
		return nil, func() {}
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	return l, func() { stop(); <-done }
}

// scanDeadWork takes over dead work every takeoverScanInterval until ctx
// is done, under the current life's holder when there is one.
func scanDeadWork(ctx context.Context, wg *sync.WaitGroup, eng deadWorkTaker, life engine.Life, log *slog.Logger) {
	wg.Go(func() {
		t := time.NewTicker(takeoverScanInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			scanOnce(ctx, eng, life, log)
		}
	})
}

func scanOnce(ctx context.Context, eng deadWorkTaker, life engine.Life, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(ctx, livenessTTL)
	defer cancel()
	if life != nil {
		holder, alive, ok := life.Current()
		if !ok {
			return
		}
		sctx = engine.WithHolder(sctx, holder, alive)
		defer context.AfterFunc(alive, cancel)()
	}
	n, err := eng.TakeOverDeadWork(sctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("taking over dead work failed in part; the next scan tries again", "taken_over", n, "error", err)
	}
}
