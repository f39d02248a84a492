package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// ledgerWorld is a test world whose "outside" — GitHub and the provider's
// machines — is shared and survives its crashes, as a real GitHub and a
// real cloud do.
type ledgerWorld struct {
	*enginetest.World
	gh       *ghsim.GitHub
	machines *simulated.Provider
}

type ledgerOptions struct {
	maxRunners       int
	bootstrapTimeout time.Duration
	confirmWindow    time.Duration
	deleteBackoffMax time.Duration
	installation     string
	visibility       time.Duration
	// provider stands in front of the shared machines (a provider whose
	// delete by name is a no-op).
	provider  func(*simulated.Provider) providers.Provider
	wrapStore func(store.Store) store.Store
}

func newLedgerWorld(t *testing.T, gh *ghsim.GitHub, machines *simulated.Provider, o ledgerOptions) *ledgerWorld {
	t.Helper()
	if o.maxRunners == 0 {
		o.maxRunners = 50
	}
	if o.confirmWindow == 0 {
		o.confirmWindow = 50 * time.Millisecond
	}
	if o.deleteBackoffMax == 0 {
		o.deleteBackoffMax = 40 * time.Millisecond
	}
	w := enginetest.NewWorld(t, enginetest.Options{
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.MaxRunners = o.maxRunners
			p.ProviderTimeout = time.Second
			if o.bootstrapTimeout > 0 {
				p.BootstrapTimeout = o.bootstrapTimeout
			}
		}),
		GitHub: func(*slog.Logger) github.GitHub { return gh },
		WrapProvider: func(string, providers.Provider) providers.Provider {
			if o.provider != nil {
				return o.provider(machines)
			}
			return machines
		},
		InstallationID:   o.installation,
		ConfirmWindow:    o.confirmWindow,
		DeleteBackoffMax: o.deleteBackoffMax,
		WrapStore:        o.wrapStore,
		WorkerVisibility: o.visibility,
	})
	return &ledgerWorld{World: w, gh: gh, machines: machines}
}

func (w *ledgerWorld) reconcile() engine.ReconcileReport {
	rep, err := w.Engine.Reconcile(context.Background())
	if err != nil {
		w.TB.Logf("reconcile: %v", err)
	}
	return rep
}

// eventually polls cond, reconciling between tries, until it holds.
func (w *ledgerWorld) eventually(what string, cond func() bool) {
	w.TB.Helper()
	enginetest.Eventually(w.TB, what, func() bool {
		if cond() {
			return true
		}
		w.reconcile()
		return false
	}, w.state)
}

// state describes open demand, live instances and machines, for failures.
func (w *ledgerWorld) state() string {
	var b strings.Builder
	jobs, _ := w.Store.ListOpenJobs(context.Background())
	for _, j := range jobs {
		fmt.Fprintf(&b, "open job %s instance=%s made=%d\n", j.Key(), j.Instance, j.Made)
	}
	for _, in := range w.Live() {
		fmt.Fprintf(&b, "live %s %s runner=%s active=%d attempts=%d fault=%q\n", in.Name, in.Status, in.RunnerStatus, in.ActiveJobID, in.Attempts, in.ProviderFault)
	}
	for _, m := range w.machinesOf() {
		fmt.Fprintf(&b, "machine %s %s %s\n", m.Name, m.ProviderID, m.Status)
	}
	return b.String()
}

// coveringRunners counts the live, running instances that serve job id:
// "exactly one" is "not zero and not two".
func (w *ledgerWorld) coveringRunners(id int64) int {
	job := w.Job(id)
	n := 0
	for _, inst := range w.Live() {
		if inst.Name == job.Instance && inst.Status == runner.StatusRunning {
			n++
		}
	}
	return n
}

// machinesOf lists this installation's machines of the pool.
func (w *ledgerWorld) machinesOf() []providers.Instance {
	ms, err := w.machines.ListInstances(context.Background(), w.PoolID(enginetest.Pool))
	if err != nil {
		w.TB.Fatal(err)
	}
	return ms
}

// onlineAll brings every registered runner online, as booted machines do.
func (w *ledgerWorld) onlineAll() {
	for _, r := range w.gh.Runners() {
		w.gh.SetOnline(r.Name, true)
	}
}

// serveAndFinish plays GitHub for the jobs: every runner that boots comes
// online; a job whose instance is up is given to it (in_progress) and
// finishes (completed; the ephemeral runner leaves). At the moment a job is
// served it must be covered by exactly one running instance — not zero,
// not two. It ends when every job is closed and no live instance and no
// machine is left.
func serveAndFinish(t *testing.T, w *ledgerWorld, ids []int64) {
	t.Helper()
	open := map[int64]bool{}
	for _, id := range ids {
		open[id] = true
	}
	w.eventually("every job served", func() bool {
		w.onlineAll()
		for _, id := range ids {
			if !open[id] {
				continue
			}
			switch n := w.coveringRunners(id); n {
			case 0:
				continue
			case 1:
			default:
				t.Fatalf("job %d is covered by %d running instances, want exactly 1", id, n)
			}
			name := w.Job(id).Instance
			w.gh.StartJob(id, name)
			w.Deliver(enginetest.Event(runner.ActionInProgress, id, name))
			w.gh.FinishJob(id, "success")
			w.Deliver(enginetest.Event(runner.ActionCompleted, id, name))
			delete(open, id)
		}
		return len(open) == 0
	})
	w.eventually("nothing left running", func() bool { return len(w.Live()) == 0 && len(w.machinesOf()) == 0 })
	for _, id := range ids {
		if job := w.Job(id); job.Status != runner.JobClosed {
			t.Errorf("job %d is %s, want closed", id, job.Status)
		}
	}
}

func ledgerJobs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(1000 + i)
	}
	return ids
}

// watchPeak samples the provider's machines until stopped and fails the
// test if there are ever more than max.
func watchPeak(t *testing.T, machines *simulated.Provider, max int) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if n := len(machines.Machines()); n > max {
				t.Errorf("%d machines exist, max_runners is %d", n, max)
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// errCrashed is what a crashed process's writes return.
var errCrashed = errors.New("process crashed")

// crashAt fails every store write from the n-th on (1-based), so the engine
// stops between two writes exactly as a killed process does; the writes
// before it are durable.
type crashAt struct {
	store.Store
	n      int64
	writes atomic.Int64
}

func (c *crashAt) write() error {
	if c.writes.Add(1) >= c.n {
		return errCrashed
	}
	return nil
}

func (c *crashAt) CreateInstance(ctx context.Context, a store.Admission) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.CreateInstance(ctx, a)
}

func (c *crashAt) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.(store.Outbox).CreateInstanceAndSend(ctx, a, body)
}

func (c *crashAt) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.UpdateInstance(ctx, from, next)
}

func (c *crashAt) CreateJob(ctx context.Context, job *runner.Job) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.CreateJob(ctx, job)
}

func (c *crashAt) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.UpdateJob(ctx, from, next)
}

// noOpDeleteByName is a provider whose delete by name does nothing and says
// it succeeded (garm-provider-aws), and whose creates can time out after
// the cloud made the machine.
type noOpDeleteByName struct {
	*simulated.Provider
	failAfterEffect atomic.Int64 // creates left to fail after their effect
}

func (p *noOpDeleteByName) DeleteInstance(ctx context.Context, instance string) error {
	if runner.OursByName(instance) {
		return nil
	}
	return p.Provider.DeleteInstance(ctx, instance)
}

func (p *noOpDeleteByName) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	m, err := p.Provider.CreateInstance(ctx, req)
	if err == nil && p.failAfterEffect.Add(-1) >= 0 {
		return providers.Instance{}, fmt.Errorf("provider timed out after the machine was made: %w", context.DeadlineExceeded)
	}
	return m, err
}
