package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/store"
)

// ReconcilerLease is the name of the lease the reconciler of one replica
// holds while it runs, when several serve processes share a store.
const ReconcilerLease = "reconciler"

// Bounds on the reconciler lease's TTL: a few reconcile intervals, but
// never so short that a slow database round trip or a garbage-collection
// pause loses it, nor so long that a dead replica's reconciler is missed
// for more than a few minutes whatever the interval (a reconcile_interval
// of an hour must not leave the fleet unreconciled for three after a
// crash).
const (
	reconcilerLeaseIntervals = 3
	minReconcilerLeaseTTL    = 3 * time.Second
	maxReconcilerLeaseTTL    = 3 * time.Minute
)

// reconcilerLeaseTTL is how long the reconciler lease lasts between
// renewals: three reconcile intervals within the bounds above. It is how
// long the other replicas wait after the holder dies (a release on a
// graceful stop hands over at once).
func reconcilerLeaseTTL(interval time.Duration) time.Duration {
	return min(max(reconcilerLeaseIntervals*interval, minReconcilerLeaseTTL), maxReconcilerLeaseTTL)
}

// replica is this process among the serve processes sharing a store: its
// holder id, made once at start and logged, for the leases it takes. Nil
// when the process owns its store alone (bolt), where there is nobody to
// take turns with.
type replica struct {
	holder string
	leases store.Leases
}

// newReplica names this process when its store is shared.
func newReplica(st *state) *replica {
	if st.soleOwner {
		return nil
	}
	return &replica{holder: leader.HolderID(), leases: st.store}
}

// runLeading runs work while this replica holds the lease name, for ttl
// at a time; without replicas (r nil) it just runs work.
func (r *replica) runLeading(ctx context.Context, name string, ttl time.Duration, log *slog.Logger, work func(context.Context)) {
	if r == nil {
		work(ctx)
		return
	}
	err := leader.Run(ctx, leader.Options{Leases: r.leases, Name: name, Holder: r.holder, TTL: ttl, Logger: log}, work)
	if err != nil {
		log.Error("cannot take turns on the lease; this replica does not run "+name, "lease", name, "error", err)
	}
}

// warnProcessLocal tells the operator of a shared store what cannot be
// shared: the simulated GitHub and the simulated provider keep their
// runners and machines in this process, so another replica (whose
// reconciler may be the one running) sees none of them and takes them
// for gone. One serve on the database is fine; several need a real GitHub
// and a real provider (or the external fake one, whose state is a file).
func warnProcessLocal(cfg *config.Config, r *replica, log *slog.Logger) {
	if r == nil {
		return
	}
	var local []string
	if cfg.GitHub.Simulated {
		local = append(local, "github.simulated")
	}
	for _, p := range cfg.Pools {
		if p.Provider.Type == "simulated" {
			local = append(local, "pools["+p.Name+"].provider simulated")
		}
	}
	if len(local) > 0 {
		log.Warn("simulated in this process only: run a single serve on this database, or replicas will take each other's runners and machines for gone",
			"process_local", local)
	}
}
