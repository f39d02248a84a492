package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// reconcileOutside compares what exists outside the store with the live set:
// machines with no live record (a provider that ignored a delete by name, a
// crash between a create and its record, a second machine under a live
// name), runners in GitHub with no live record (a leaked JIT registration),
// runners that never came online or sat idle past the bootstrap timeout,
// and active runners whose job ended without a completed webhook (lessons
// P10, P11, P15, P19). It costs one provider list per pool and one GitHub
// list per owner per pass — never a call per job.
func (e *Engine) reconcileOutside(ctx context.Context, live []*runner.Instance, now time.Time, rep *ReconcileReport) error {
	byName := make(map[string]*runner.Instance, len(live))
	for _, inst := range live {
		byName[inst.Name] = inst
	}
	var errs []error
	for i := range e.pools {
		if err := e.reconcileMachines(ctx, &e.pools[i], byName, rep); err != nil {
			errs = append(errs, err)
		}
	}
	for _, owner := range e.owners() {
		if err := e.reconcileRunners(ctx, owner, live, byName, now, rep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// liveRecord re-reads an instance the pass did not see live: it may have
// been admitted after the live set was read. It returns nil when there is
// no live record.
func (e *Engine) liveRecord(ctx context.Context, name string) (*runner.Instance, error) {
	inst, err := e.store.GetInstance(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil || !inst.Status.Live() {
		return nil, err
	}
	return inst, nil
}

// orphaned reports whether a listed machine has no live record to answer
// for it: no record by its name, or a record that names another machine
// (a retried create's second machine under the same name). A record still
// creating has no provider id yet and answers for every machine of its name.
func orphaned(rec *runner.Instance, providerID string) bool {
	switch {
	case rec == nil:
		return true
	case rec.Status == runner.StatusCreating || rec.Status == runner.StatusPendingCreate:
		return false
	case rec.ProviderID == "" || providerID == "":
		return false
	}
	return rec.ProviderID != providerID
}

// reconcileMachines deletes the pool's machines that no live record
// answers for. The provider lists by the pool's installation-unique id, so
// another installation's machines are never seen, let alone deleted.
func (e *Engine) reconcileMachines(ctx context.Context, pool *runner.Pool, byName map[string]*runner.Instance, rep *ReconcileReport) error {
	lctx, cancel := context.WithTimeout(ctx, e.providerTimeout(pool.Name))
	machines, err := e.providers[pool.Name].ListInstances(lctx, pool.ID)
	cancel()
	if err != nil {
		return fmt.Errorf("list machines of pool %s: %w", pool.Name, err)
	}
	var errs []error
	for _, m := range machines {
		if !runner.OursByName(m.Name) {
			continue
		}
		rec := byName[m.Name]
		if rec == nil {
			if rec, err = e.liveRecord(ctx, m.Name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if !orphaned(rec, m.ProviderID) {
			continue
		}
		target := m.ProviderID
		if target == "" {
			target = m.Name
		}
		log := e.log.With("instance", m.Name, "pool", pool.Name, "provider_id", m.ProviderID, "reconciler", true)
		if err := e.deleteMachine(ctx, pool.Name, target); err != nil {
			log.Warn("orphaned machine could not be deleted; next pass retries", "error", err)
			errs = append(errs, err)
			continue
		}
		rep.OrphanMachinesDeleted++
		log.Warn("deleted a machine that no live instance record answers for")
	}
	return errors.Join(errs...)
}

// sweepMachines deletes, by provider id, every machine of the pool named
// name except keep: after a failed create, whatever it may have left.
func (e *Engine) sweepMachines(ctx context.Context, log *slog.Logger, poolName, name, keep string) error {
	pool, ok := e.pool(poolName)
	if !ok {
		return fmt.Errorf("pool %q is no longer configured", poolName)
	}
	lctx, cancel := context.WithTimeout(ctx, e.providerTimeout(poolName))
	machines, err := e.providers[poolName].ListInstances(lctx, pool.ID)
	cancel()
	if err != nil {
		return fmt.Errorf("list machines of pool %s: %w", poolName, err)
	}
	var errs []error
	for _, m := range machines {
		if m.Name != name || m.ProviderID == "" || m.ProviderID == keep {
			continue
		}
		if err := e.deleteMachine(ctx, poolName, m.ProviderID); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Warn("deleted a machine a failed create left behind", "provider_id", m.ProviderID)
	}
	return errors.Join(errs...)
}

// owners lists the distinct GitHub owners the pools register runners at.
func (e *Engine) owners() []github.Owner {
	var out []github.Owner
	seen := map[string]bool{}
	for _, p := range e.pools {
		o := p.Owner
		if o.IsZero() || seen[o.String()] {
			continue
		}
		seen[o.String()] = true
		out = append(out, o)
	}
	return out
}

func (e *Engine) reconcileRunners(ctx context.Context, owner github.Owner, live []*runner.Instance, byName map[string]*runner.Instance, now time.Time, rep *ReconcileReport) error {
	runners, err := e.github.ListRunners(ctx, owner)
	if err != nil {
		return fmt.Errorf("list runners of %s: %w", owner, err)
	}
	sort.Slice(runners, func(i, j int) bool { return runners[i].Name < runners[j].Name })
	listed := make(map[string]github.Runner, len(runners))
	var errs []error
	for _, r := range runners {
		if !runner.RegisteredBy(e.controllerID, r.Name, r.Labels) {
			continue
		}
		listed[r.Name] = r
		if byName[r.Name] != nil || r.Busy {
			continue
		}
		if rec, err := e.liveRecord(ctx, r.Name); err != nil || rec != nil {
			errs = append(errs, err)
			continue
		}
		log := e.log.With("instance", r.Name, "github_runner_id", r.ID, "owner", owner.String(), "reconciler", true)
		if err := e.github.RemoveRunner(ctx, github.RunnerRef{Owner: owner, ID: r.ID, Name: r.Name}); err != nil {
			log.Warn("leaked runner could not be removed from GitHub; next pass retries", "error", err)
			errs = append(errs, err)
			continue
		}
		rep.OrphanRunnersRemoved++
		log.Warn("removed a GitHub runner that has no live instance record")
	}
	warm := e.warmKeepers(live)
	for _, inst := range live {
		if inst.Status != runner.StatusRunning || inst.Owner.String() != owner.String() {
			continue
		}
		log := e.log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID, "reconciler", true)
		if inst.RunnerStatus == runner.RunnerActive {
			if err := e.confirmJobEnded(ctx, log, inst, listed, now, rep); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if reason := e.unneeded(inst, listed, now, warm[inst.Name]); reason != "" {
			rep.UnneededScheduled++
			log.Warn("runner scheduled for delete", "reason", reason)
			if err := e.scheduleDelete(ctx, log, inst.Name, EventMeta{}, reason); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// confirmJobEnded reaps an active runner whose job ended without a
// completed webhook (one is sometimes never delivered): GitHub no longer
// lists it (an ephemeral runner removes itself after its job) or lists it
// not busy. GitHub's busy flag has been seen false minutes into a running
// job, so one reading only starts a confirmation window; a second reading
// at least ConfirmWindow later schedules the delete — and the delete's
// removal from GitHub (422 while busy) is still the last guard (P15, P19).
func (e *Engine) confirmJobEnded(ctx context.Context, log *slog.Logger, inst *runner.Instance, listed map[string]github.Runner, now time.Time, rep *ReconcileReport) error {
	r, registered := listed[inst.Name]
	busy := registered && r.Busy
	switch {
	case busy && inst.NotBusySince.IsZero():
		return nil
	case busy:
		_, _, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
			if cur.NotBusySince.IsZero() || cur.Status != runner.StatusRunning {
				return nil, errNoChange
			}
			next := cur.Clone()
			next.NotBusySince = time.Time{}
			return next, nil
		})
		return err
	case inst.NotBusySince.IsZero():
		rep.NotBusyFirstSeen++
		_, _, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
			if !cur.NotBusySince.IsZero() || cur.Status != runner.StatusRunning || cur.RunnerStatus != runner.RunnerActive {
				return nil, errNoChange
			}
			next := cur.Clone()
			next.NotBusySince = now
			return next, nil
		})
		log.Info("active runner not busy in GitHub; confirming before reaping", "listed", registered, "confirm_window", e.opts.ConfirmWindow.String())
		return err
	case now.Sub(inst.NotBusySince) < e.opts.ConfirmWindow:
		return nil
	}
	rep.FinishedReaped++
	reason := fmt.Sprintf("runner's job ended without a completed webhook: not busy in GitHub since %s", inst.NotBusySince.UTC().Format(time.RFC3339))
	log.Warn("runner scheduled for delete", "reason", reason)
	return e.scheduleDelete(ctx, log, inst.Name, EventMeta{}, reason)
}

// unneeded says why a running instance whose runner is not running a job
// should go, or "" if it should stay: its runner never came online within
// the pool's bootstrap timeout (a machine that failed to boot never says
// so), or it has sat online and idle past it — the job it was made for went
// to another runner or was cancelled — unless it is one of the pool's
// min_idle warm runners.
func (e *Engine) unneeded(inst *runner.Instance, listed map[string]github.Runner, now time.Time, warm bool) string {
	pool, ok := e.pool(inst.Pool)
	if !ok || now.Sub(inst.StatusChangedAt) <= pool.BootstrapTimeout {
		return ""
	}
	r, registered := listed[inst.Name]
	switch {
	case registered && r.Busy:
		return ""
	case !registered || r.Status != "online":
		return fmt.Sprintf("runner never came online within the bootstrap timeout %s", pool.BootstrapTimeout)
	case warm:
		return ""
	default:
		return fmt.Sprintf("runner idle past the bootstrap timeout %s with no job", pool.BootstrapTimeout)
	}
}
