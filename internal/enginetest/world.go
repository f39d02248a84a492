// Package enginetest opens the one test world the engine's tests and the
// tests of everything built on the engine share: the real engine over a
// real bbolt store holding the work queue in its file (as `runfleet serve`
// runs it), the simulated GitHub and a simulated provider per pool, in the
// test's temporary directory. GitHub and the providers are outside the
// runfleet process: they survive Restart, which loses only memory.
package enginetest

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// Options shape a World. The zero value is one pool (DefaultPool) with a
// fault-free provider, the simulated GitHub and real time.
type Options struct {
	// Pools the engine serves, each with a simulated provider of its own;
	// default OnePool(nil).
	Pools runner.Pools
	// Faults and CreateLatency apply to every pool's simulated provider.
	Faults        simulated.Faults
	CreateLatency time.Duration
	// WrapProvider, when set, stands between the engine and a pool's
	// simulated provider (or replaces it): a provider binary, a clock.
	WrapProvider func(pool string, p providers.Provider) providers.Provider
	// GitHub builds the engine's GitHub client, given the world's logger;
	// default the simulated GitHub (World.GitHub).
	GitHub func(log *slog.Logger) github.GitHub
	// InstallationID fixes the installation id the pools' provider-side ids
	// derive from; default the store's own, as serve reads it.
	InstallationID string
	// Now is the engine's clock, and its queue's (a *testclock.Clock's Now:
	// a message delayed is due when that clock says); default time.Now.
	Now func() time.Time
	// ProviderTimeout and ConfirmWindow: see engine.Options (defaults
	// there). DeleteBackoffMax defaults to 200ms; the minimum is 20ms.
	ProviderTimeout  time.Duration
	ConfirmWindow    time.Duration
	DeleteBackoffMax time.Duration
	// Engine has the last word on the engine's options (bootstrap URLs,
	// instance tokens).
	Engine func(*engine.Options)
	// WorkerVisibility is how long a worker may work on one message before
	// it is handed to another, and how long stopping the workers waits for
	// a hung provider call; default 30s.
	WorkerVisibility time.Duration
	// SeparateQueue keeps the queue in a file of its own, so the engine
	// admits through a plain store and a send, as it does on DynamoDB and
	// SQS, rather than through store.Outbox.
	SeparateQueue bool
	// WrapStore, when set, stands between the engine and the store (a
	// crash injected between two writes). It is called at every open.
	WrapStore func(store.Store) store.Store
	// Logger replaces the captured log (World.Logs stays empty): for
	// benchmarks, which must not keep everything they log.
	Logger *slog.Logger
}

// The world's engine retries deletes fast, and its queue dead-letters a
// message only after many receives: tests see behaviour, not waiting.
const (
	deleteBackoffMin = 20 * time.Millisecond
	deleteBackoffMax = 200 * time.Millisecond
	maxReceives      = 10
)

// World is one runfleet installation under test. Store, Queue and Engine
// are replaced by Restart; read them afresh after one.
type World struct {
	TB  testing.TB
	Dir string

	Store  store.Store
	Queue  *local.Queue
	Engine *engine.Engine

	// GitHub is the simulated GitHub; nil when Options.GitHub replaced it.
	GitHub *ghsim.GitHub
	// Provider is the first pool's simulated provider, Providers every
	// pool's. Recorder and Recorders keep what the engine asked of them.
	Provider  *simulated.Provider
	Providers map[string]*simulated.Provider
	Recorder  *Recorder
	Recorders map[string]*Recorder
	// Logs holds the world's JSON log (engine, GitHub client) at debug.
	Logs *testlog.Buffer

	opts           Options
	log            *slog.Logger
	github         github.GitHub
	engineProvs    map[string]providers.Provider
	installationID string
	closeState     func() error
	deliveries     atomic.Int64

	mu      sync.Mutex
	stopped chan struct{}
	stop    context.CancelFunc
}

// NewWorld opens a world in tb's temporary directory; it is closed at
// cleanup. Workers are not started: StartWorkers.
func NewWorld(tb testing.TB, o Options) *World {
	tb.Helper()
	if len(o.Pools) == 0 {
		o.Pools = OnePool(nil)
	}
	if o.DeleteBackoffMax == 0 {
		o.DeleteBackoffMax = deleteBackoffMax
	}
	w := &World{
		TB: tb, Dir: tb.TempDir(), Logs: &testlog.Buffer{}, opts: o,
		Providers: map[string]*simulated.Provider{}, Recorders: map[string]*Recorder{},
		engineProvs: map[string]providers.Provider{},
	}
	w.log = o.Logger
	if w.log == nil {
		w.log = w.Logs.Logger(slog.LevelDebug)
	}
	if o.GitHub != nil {
		w.github = o.GitHub(w.log)
		w.GitHub, _ = w.github.(*ghsim.GitHub)
	} else {
		w.GitHub = ghsim.New()
		w.github = w.GitHub
	}
	for i, pool := range o.Pools {
		sim := simulated.NewWithOptions(simulated.Options{CreateLatency: o.CreateLatency, Faults: o.Faults})
		var p providers.Provider = sim
		if o.WrapProvider != nil {
			p = o.WrapProvider(pool.Name, p)
		}
		rec := &Recorder{Provider: p}
		w.Providers[pool.Name], w.Recorders[pool.Name], w.engineProvs[pool.Name] = sim, rec, rec
		if i == 0 {
			w.Provider, w.Recorder = sim, rec
		}
	}
	w.open()
	tb.Cleanup(w.close)
	return w
}

// open opens the state files and builds an engine over them, as a starting
// `runfleet serve` does.
func (w *World) open() {
	tb := w.TB
	tb.Helper()
	queueOpts := local.Options{MaxReceives: maxReceives, Now: w.opts.Now}
	// The store reads the engine's clock too: retention and expiry are
	// measured on the clock the records were dated by, never on a real
	// clock beside a test's stopped one (a deleted instance dated by a
	// stopped clock would otherwise expire as the calendar moves on).
	var storeOpts []bolt.Option
	if w.opts.Now != nil {
		storeOpts = append(storeOpts, bolt.WithClock(w.opts.Now))
	}
	statePath := filepath.Join(w.Dir, "state.db")
	if w.opts.SeparateQueue {
		st, err := bolt.Open(statePath, storeOpts...)
		if err != nil {
			tb.Fatal(err)
		}
		q, err := local.Open(filepath.Join(w.Dir, "queue.db"), queueOpts)
		if err != nil {
			_ = st.Close()
			tb.Fatal(err)
		}
		w.Store, w.Queue = st, q
		w.closeState = func() error { return errors.Join(q.Close(), st.Close()) }
	} else {
		st, err := bolt.OpenWithQueue(statePath, queueOpts, storeOpts...)
		if err != nil {
			tb.Fatal(err)
		}
		w.Store, w.Queue, w.closeState = st, st.Queue(), st.Close
	}
	if w.installationID == "" {
		w.installationID = w.opts.InstallationID
	}
	if w.installationID == "" {
		id, err := w.Store.InstallationID(context.Background())
		if err != nil {
			tb.Fatalf("read the installation id: %v", err)
		}
		w.installationID = id
	}
	var engineStore store.Store = w.Store
	if w.opts.WrapStore != nil {
		engineStore = w.opts.WrapStore(w.Store)
	}
	opts := engine.Options{
		RegistrarOptions: engine.RegistrarOptions{
			LedgerOptions: engine.LedgerOptions{
				ControllerID:     Controller,
				InstallationID:   w.installationID,
				Store:            engineStore,
				Queue:            w.Queue,
				Pools:            w.opts.Pools,
				Logger:           w.log,
				Now:              w.opts.Now,
				DeleteBackoffMin: deleteBackoffMin,
				DeleteBackoffMax: w.opts.DeleteBackoffMax,
			},
			GitHub: w.github,
		},
		Providers:       w.engineProvs,
		ProviderTimeout: w.opts.ProviderTimeout,
		ConfirmWindow:   w.opts.ConfirmWindow,
	}
	if w.opts.Engine != nil {
		w.opts.Engine(&opts)
	}
	e, err := engine.New(opts)
	if err != nil {
		tb.Fatalf("engine: %v", err)
	}
	w.Engine = e
}

// Restart stops the workers, closes the state files and opens them again
// with a new engine, which recovers what was left in flight, as a restarted
// `runfleet serve` does. Workers are not restarted.
func (w *World) Restart() {
	w.TB.Helper()
	w.close()
	w.open()
	if err := w.Engine.RecoverAtStart(context.Background()); err != nil {
		w.TB.Fatalf("recover at start: %v", err)
	}
}

// Crash kills the process abruptly: the state files are closed under the
// running workers — whatever they were writing fails — and every bit of
// memory (engine, in-flight work) is dropped; nothing is shut down in
// order. Then it starts again from the same files, recovering what was
// left in flight, and restarts n workers (none when n is 0). GitHub and
// the provider's machines, being outside the process, live on.
func (w *World) Crash(n int) {
	w.TB.Helper()
	if w.closeState != nil {
		_ = w.closeState()
		w.closeState = nil
	}
	w.StopWorkers()
	w.open()
	if err := w.Engine.RecoverAtStart(context.Background()); err != nil {
		w.TB.Logf("recover at start after a crash: %v", err)
	}
	if n > 0 {
		w.StartWorkers(n)
	}
}

// close stops the workers and closes the state files; it is idempotent.
func (w *World) close() {
	w.StopWorkers()
	if w.closeState != nil {
		if err := w.closeState(); err != nil {
			w.TB.Errorf("close the state files: %v", err)
		}
		w.closeState = nil
	}
}

// PoolID is a pool's provider-side id, as the engine gives it to providers.
func (w *World) PoolID(pool string) string {
	w.TB.Helper()
	p, ok := w.Engine.Pools().Get(pool)
	if !ok {
		w.TB.Fatalf("the world has no pool %q", pool)
	}
	return p.ID
}

// InstallationID is the installation id the pools' ids derive from.
func (w *World) InstallationID() string { return w.installationID }
