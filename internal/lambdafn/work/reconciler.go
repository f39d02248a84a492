package work

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
)

// ScheduleHandler is what lambda.Start runs for the ReconcilerFunction: an
// EventBridge schedule's ticks.
type ScheduleHandler func(ctx context.Context, ev events.EventBridgeEvent) (engine.ReconcileReport, error)

// Reconciler is the ReconcilerFunction, built from the environment on the
// first invocation.
func Reconciler() ScheduleHandler {
	return NewReconciler(FromEnvironment(lambdafn.RoleReconciler), nil)
}

// NewReconciler is the ReconcilerFunction with its Options from options; a
// failed start is logged to log (nil: JSON lines on stdout) and is the
// invocation's error, so the function's Errors metric shows it; the next
// tick tries again.
func NewReconciler(options OptionsFunc, log *slog.Logger) ScheduleHandler {
	app := lambdafn.NewLazy(lambdafn.RoleReconciler, func(ctx context.Context) (*App, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return Build(ctx, lambdafn.RoleReconciler, opts)
	}, log)
	return func(ctx context.Context, ev events.EventBridgeEvent) (engine.ReconcileReport, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return engine.ReconcileReport{}, err
		}
		return a.HandleSchedule(ctx, ev)
	}
}

// HandleSchedule runs one reconcile pass per EventBridge schedule tick and
// logs what it did. Per-instance failures come back joined as the error,
// after the whole pass, so the function's Errors metric shows them; the
// next tick retries, as every reconcile step is safe to repeat.
func (a *App) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) (engine.ReconcileReport, error) {
	log := a.InvocationLogger(ctx).With("schedule", ev.Resources, "scheduled_at", ev.Time)
	eng, err := a.engine(log)
	if err != nil {
		return engine.ReconcileReport{}, err
	}
	metrics := a.startMetrics()
	defer metrics.flush(ctx, log)
	started := time.Now()
	a.migrateLegacyLive(ctx, log)
	// The gauges are read as the pass finds the fleet: stuck instances are
	// the ones it is about to recover.
	a.recordFleet(ctx, log, eng)
	// First, at once: work a worker invocation claimed and left at its
	// timeout (its claim ended at its deadline) is taken over now, not
	// after the creating timeout (issue #32).
	taken, takeErr := eng.TakeOverDeadWork(asInvocation(ctx))
	if taken > 0 || takeErr != nil {
		log.WarnContext(ctx, "work left by stopped invocations taken over", "taken_over", taken, "error", takeErr)
	}
	rep, err := eng.Reconcile(ctx)
	err = errors.Join(takeErr, err)
	// After the fleet's pass, at most once per cache.evict_every: the
	// cache's eviction by size and age (its failures are its own).
	a.evictCache(ctx, log)
	a.Metrics.ReconcileResult(err)
	attrs := []any{
		"examined", rep.Examined,
		"creates_resent", rep.CreatesResent,
		"deletes_resent", rep.DeletesResent,
		"stuck_creating_recovered", rep.StuckCreating,
		"stuck_deleting_recovered", rep.StuckDeleting,
		"errors_scheduled", rep.ErrorsScheduled,
		"duration_ms", time.Since(started).Milliseconds(),
	}
	if err != nil {
		log.ErrorContext(ctx, "reconcile pass finished with errors", append(attrs, "error", err)...)
		return rep, err
	}
	log.InfoContext(ctx, "reconcile pass finished", attrs...)
	return rep, nil
}

// recordFleet records the fleet gauges (instances, stuck, open jobs, jobs
// waiting for capacity) for this pass. A failed read leaves them out of
// this pass and is logged; the pass goes on.
func (a *App) recordFleet(ctx context.Context, log *slog.Logger, eng *engine.Engine) {
	live, err := eng.ListInstances(ctx, "")
	var open []*runner.Job
	if err == nil {
		open, err = eng.ListOpenJobs(ctx)
	}
	if err != nil {
		log.WarnContext(ctx, "fleet metrics could not be read; this pass publishes none", "error", err)
		return
	}
	pools := make([]metrics.PoolLimit, 0, len(a.Config.Pools))
	for _, p := range a.Config.Pools {
		pools = append(pools, metrics.PoolLimit{Name: p.Name, MaxRunners: p.MaxRunners})
	}
	a.Metrics.Fleet(metrics.MeasureFleet(pools, live, open, time.Now(), eng.Stuck))
}
