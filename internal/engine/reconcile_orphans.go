package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// reconcileOutside compares what exists outside the store with the live set:
// machines with no live record (a provider that ignored a delete by name, a
// crash between a create and its record), runners in GitHub with no live
// record (a leaked JIT registration), and runners that never came online
// within their pool's bootstrap timeout or sat idle past it (lessons P10,
// P11). It costs one provider list per pool and one GitHub list per owner per
// pass — never a call per job.
func (e *Engine) reconcileOutside(ctx context.Context, live []*runner.Instance, now time.Time, rep *ReconcileReport) error {
	byName := make(map[string]*runner.Instance, len(live))
	for _, inst := range live {
		byName[inst.Name] = inst
	}
	var errs []error
	for i := range e.pools.Pools {
		if err := e.reconcileMachines(ctx, e.pools.Pools[i].Name, byName, rep); err != nil {
			errs = append(errs, err)
		}
	}
	for _, owner := range e.owners() {
		if err := e.reconcileRunners(ctx, owner, byName, now, rep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stillLive re-reads an instance the pass did not see live: it may have been
// admitted after the live set was read.
func (e *Engine) stillLive(ctx context.Context, name string) (bool, error) {
	inst, err := e.store.GetInstance(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return inst.Status.Live(), nil
}

func (e *Engine) reconcileMachines(ctx context.Context, pool string, byName map[string]*runner.Instance, rep *ReconcileReport) error {
	lctx, cancel := context.WithTimeout(ctx, e.opts.ProviderTimeout)
	machines, err := e.providers[pool].ListInstances(lctx, pool)
	cancel()
	if err != nil {
		return fmt.Errorf("list machines of pool %s: %w", pool, err)
	}
	var errs []error
	for _, m := range machines {
		if !strings.HasPrefix(m.Name, runner.NamePrefix) || byName[m.Name] != nil {
			continue
		}
		if live, err := e.stillLive(ctx, m.Name); err != nil || live {
			errs = append(errs, err)
			continue
		}
		target := m.ProviderID
		if target == "" {
			target = m.Name
		}
		log := e.log.With("instance", m.Name, "pool", pool, "provider_id", m.ProviderID, "reconciler", true)
		if err := e.deleteMachine(ctx, pool, target); err != nil {
			log.Warn("orphaned machine could not be deleted; next pass retries", "error", err)
			errs = append(errs, err)
			continue
		}
		rep.OrphanMachinesDeleted++
		log.Warn("deleted a machine that has no live instance record")
	}
	return errors.Join(errs...)
}

// owners lists the distinct GitHub owners the pools register runners at.
func (e *Engine) owners() []github.Owner {
	var out []github.Owner
	seen := map[string]bool{}
	for _, p := range e.pools.Pools {
		o, err := github.ParseOwner(p.Owner)
		if err != nil || seen[o.String()] {
			continue
		}
		seen[o.String()] = true
		out = append(out, o)
	}
	return out
}

// ours reports whether a GitHub runner was registered by this controller.
func (e *Engine) ours(r github.Runner) bool {
	if !strings.HasPrefix(r.Name, runner.NamePrefix) {
		return false
	}
	own := ControllerLabel(e.opts.ControllerID)
	return own == "" || slices.ContainsFunc(r.Labels, func(l string) bool { return strings.EqualFold(l, own) })
}

func (e *Engine) reconcileRunners(ctx context.Context, owner github.Owner, byName map[string]*runner.Instance, now time.Time, rep *ReconcileReport) error {
	runners, err := e.github.ListRunners(ctx, owner)
	if err != nil {
		return fmt.Errorf("list runners of %s: %w", owner, err)
	}
	listed := make(map[string]github.Runner, len(runners))
	var errs []error
	for _, r := range runners {
		if !e.ours(r) {
			continue
		}
		listed[r.Name] = r
		if byName[r.Name] != nil || r.Busy {
			continue
		}
		if live, err := e.stillLive(ctx, r.Name); err != nil || live {
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
	warm := e.warmKeepers(byName)
	for _, inst := range byName {
		if inst.Status != runner.StatusRunning || inst.Owner != owner.String() {
			continue
		}
		if reason := e.unneeded(inst, listed, now, warm[inst.Name]); reason != "" {
			rep.UnneededScheduled++
			log := e.log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID, "reconciler", true)
			log.Warn("runner scheduled for delete", "reason", reason)
			if err := e.scheduleDelete(ctx, log, inst.Name, "", reason); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// unneeded says why a running instance should go, or "" if it should stay:
// its runner never came online within the pool's bootstrap timeout
// (completed webhooks are sometimes never delivered, and a machine that
// failed to boot never sends one), or it has sat online and idle past it —
// the job it was made for went to another runner or was cancelled — unless
// it is one of the pool's min_idle warm runners. A runner that is running a
// job is never touched here.
func (e *Engine) unneeded(inst *runner.Instance, listed map[string]github.Runner, now time.Time, warm bool) string {
	pool, ok := e.pool(inst.Pool)
	if !ok || inst.RunnerStatus == runner.RunnerActive || now.Sub(inst.StatusChangedAt) <= pool.BootstrapTimeout {
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
