package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// naive is the autoscaler the peers' bug reports describe: a runner per
// queued webhook, a delete per completed webhook, no reconciler. It exists
// to show that the simulation's invariants catch it.
type naive struct{ d Deps }

func newNaive(_ context.Context, d Deps) (Controller, error) { return &naive{d: d}, nil }

func (n *naive) HandleJobEvent(ctx context.Context, ev runner.JobEvent, _ engine.EventMeta) (string, error) {
	pool, ok := n.d.Pools.Match(ev.Repository, ev.Org, "", ev.Labels)
	if !ok {
		return "no pool", nil
	}
	name := runner.InstanceName(pool.Name, ev.JobID, ev.RunAttempt)
	switch ev.Action {
	case runner.ActionQueued:
		now := n.d.Now()
		inst := &runner.Instance{Name: name, Pool: pool.Name, Status: runner.StatusPendingCreate, Owner: pool.Owner,
			Labels: pool.RunnerLabels(controllerID), JobID: ev.JobID, RunAttempt: ev.RunAttempt, CreatedAt: now, UpdatedAt: now, StatusChangedAt: now}
		err := n.d.Store.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: pool.MaxRunners})
		if errors.Is(err, store.ErrAlreadyExists) || errors.Is(err, store.ErrPoolFull) {
			return "dropped", nil
		}
		if err != nil {
			return "", err
		}
		return "created", n.d.Queue.Send(ctx, []byte("create:"+name), 0)
	case runner.ActionCompleted:
		return "deleting", n.d.Queue.Send(ctx, []byte("delete:"+name), 0)
	}
	return "ignored", nil
}

func (n *naive) HandleMessage(ctx context.Context, _ string, _ int, body []byte) (bool, error) {
	kind, name, _ := strings.Cut(string(body), ":")
	inst, err := n.d.Store.GetInstance(ctx, name)
	if err != nil {
		return errors.Is(err, store.ErrNotFound), err
	}
	owner := inst.GitHubOwner()
	switch {
	case kind == "create" && inst.Status == runner.StatusPendingCreate:
		if _, err := n.d.GitHub.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: name, Labels: inst.Labels}); err != nil {
			return false, err
		}
		pool, _ := n.d.Pools.Get(inst.Pool)
		if _, err := n.d.Providers[inst.Pool].CreateInstance(ctx, providers.CreateRequest{Name: name, Pool: inst.Pool, PoolID: pool.ID}); err != nil {
			return false, err
		}
		return true, n.to(ctx, inst, runner.StatusCreating, runner.StatusRunning)
	case kind == "delete" && inst.Status == runner.StatusRunning:
		_ = n.d.GitHub.RemoveRunner(ctx, github.RunnerRef{Owner: owner, Name: name})
		if err := n.d.Providers[inst.Pool].DeleteInstance(ctx, name); err != nil {
			return false, err
		}
		return true, n.to(ctx, inst, runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted)
	}
	return true, nil
}

func (n *naive) to(ctx context.Context, inst *runner.Instance, steps ...runner.Status) error {
	for _, s := range steps {
		next, err := inst.Transition(s, n.d.Now())
		if err != nil {
			return err
		}
		if err := n.d.Store.UpdateInstance(ctx, inst.Status, next); err != nil {
			return err
		}
		inst = next
	}
	return nil
}

func (n *naive) Reconcile(context.Context) error { return nil }
func (n *naive) LeftInFlight(context.Context) (func(context.Context) error, error) {
	return func(context.Context) error { return nil }, nil
}

// The invariants must catch an autoscaler that trusts webhooks: it loses
// jobs to dropped deliveries and full pools, and destroys runners that
// GitHub gave another job.
func TestInvariantsCatchANaiveAutoscaler(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := DefaultConfig(seed)
		cfg.Jobs = 30
		res := Run(cfg, BoltBackend{Dir: t.TempDir()}, newNaive)
		if res.Failed() {
			caught++
			t.Logf("seed %d: %s", seed, res.Violations[0])
		}
	}
	if caught == 0 {
		t.Fatal("no seed caught the naive autoscaler: the invariants check nothing")
	}
}
