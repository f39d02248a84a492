package serve

import (
	"context"
	"log/slog"
	"reflect"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/store"
)

// reconciler runs a reconcile pass and a purge of expired records at start
// and then every interval, the embedded counterpart of the scheduled
// reconciler function.
type reconciler struct {
	engine *engine.Engine
	// purger removes expired records after each pass; nil when the store
	// expires them itself.
	purger   store.Purger
	interval time.Duration
	log      *slog.Logger
	// metrics counts each pass's result (the engine reports the rest).
	metrics metrics.Recorder
}

func (r *reconciler) run(ctx context.Context) {
	// A pass at start picks up what the previous process left half done.
	r.pass(ctx)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.pass(ctx)
		}
	}
}

// pass logs at info level only when it did something or failed: a quiet
// fleet makes quiet logs.
func (r *reconciler) pass(ctx context.Context) {
	rep, err := r.engine.Reconcile(ctx)
	if ctx.Err() != nil {
		return
	}
	if r.metrics != nil {
		r.metrics.ReconcileResult(err)
	}
	if err != nil {
		r.log.Warn("reconcile pass had errors; the next pass retries", "error", err, "report", rep)
	}
	purged, perr := r.purge(ctx)
	if perr != nil && ctx.Err() == nil {
		r.log.Warn("purging expired records failed; the next pass retries", "error", perr)
	}
	if acted(rep) || purged > 0 {
		r.log.Info("reconcile pass", "report", rep, "purged_records", purged)
	} else {
		// At debug level every pass is seen, which shows an operator (and
		// the replicas test) which replica reconciles.
		r.log.Debug("reconcile pass", "examined", rep.Examined)
	}
}

// purge removes the records whose retention or expiry has passed.
func (r *reconciler) purge(ctx context.Context) (int, error) {
	if r.purger == nil {
		return 0, nil
	}
	n, err := r.purger.PurgeExpired(ctx)
	if err != nil {
		return n, err
	}
	m, err := r.purger.PurgeExpiredCredentials(ctx)
	return n + m, err
}

// acted reports whether a pass changed anything: any counter but Examined
// (and the live snapshot), including counters the report gains later.
func acted(rep engine.ReconcileReport) bool {
	rep.Live = nil
	return !reflect.DeepEqual(rep, engine.ReconcileReport{Examined: rep.Examined})
}
