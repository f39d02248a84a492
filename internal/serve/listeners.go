package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// buildListeners makes one listener per scale-set pool, feeding eng. Each
// holds its pool's lease in the store, so among replicas sharing the store
// exactly one listens to a scale set; on a store this process owns alone
// the lease is simply always its own. Each reports its polls and session
// conflicts to rec, which shows their series (runfleet_listener_*) from
// the start for these pools only.
func buildListeners(controllerID string, pools []wiring.ScaleSetPool, eng *engine.Engine, st *state, rep *replica,
	rec *promexport.Recorder, log *slog.Logger) ([]*listener.Listener, error) {
	holder := leader.HolderID()
	if rep != nil {
		holder = rep.holder
	}
	out := make([]*listener.Listener, 0, len(pools))
	names := make([]string, 0, len(pools))
	for i := range pools {
		p := &pools[i]
		l, err := listener.New(listener.Options{
			Pool: policy.Pool(&p.Pool), ScaleSet: p.ScaleSet, RunnerGroup: p.RunnerGroup,
			Client: listener.ScaleSetClient(p.Client), Intake: eng, Store: st.store, Holder: holder, ControllerID: controllerID,
			Observer: rec, Logger: log,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, l)
		names = append(names, p.Pool.Name)
	}
	rec.WatchListeners(names)
	return out, nil
}

// startListeners runs the listeners until ctx ends; each deletes its
// message session on the way out.
func startListeners(ctx context.Context, wg *sync.WaitGroup, listeners []*listener.Listener, log *slog.Logger) {
	for _, l := range listeners {
		wg.Go(func() {
			if err := l.Run(ctx); err != nil {
				log.Error("a scale-set listener cannot run; its pool gets no job", "error", err)
			}
		})
	}
}

// freeDeadListenerLeases frees, on a store this process owns alone, the
// scale-set pools' listener leases a crashed predecessor held
// (listener.FreeDeadLeases).
func freeDeadListenerLeases(ctx context.Context, leases store.Leases, pools []wiring.ScaleSetPool, log *slog.Logger) {
	names := make([]string, len(pools))
	for i := range pools {
		names[i] = pools[i].Pool.Name
	}
	listener.FreeDeadLeases(ctx, leases, names, time.Now(), log)
}
