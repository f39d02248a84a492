// Package engine holds runfleet's use cases over its ports, in three
// tiers, each named for what it can do and each built on the one below, so
// a function builds only the tier it uses:
//
//   - Ledger (ledger.go): the store and the queue. It records demand (job
//     events, through the intake port, into the job ledger and the
//     instances that serve it), answers booting machines (bootstrap.go) and
//     reads the records. It never calls GitHub or a provider, so it runs
//     where neither is reachable (the webhook and metadata functions).
//   - Registrar (registrar.go): the ledger plus GitHub, where runners are
//     registered and removed. The operator's deletes run on it
//     (forcedelete.go); it never calls a provider.
//   - Engine: the registrar plus the providers, which make and remove
//     machines: the worker (creating and deleting instances, serving the
//     job ledger) and the reconciler.
//
// Each tier's options contain the lower tier's (Options ⊃ RegistrarOptions
// ⊃ LedgerOptions), so a setting exists once and its default is applied
// once, by the tier that owns it. The package never sees the config
// format, an adapter or GitHub's payload.
package engine

import (
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// Options are the engine's dependencies and tunables: the registrar's,
// and the providers with the work side's settings.
type Options struct {
	RegistrarOptions

	// Providers maps each pool name to its provider.
	Providers map[string]providers.Provider
	// Rand names warm runners (min_idle); default crypto/rand. A seeded
	// source makes a simulation replay exactly.
	Rand io.Reader

	// MaxCreateAttempts bounds how often one instance's create is retried
	// under the same name (default 3); the job ledger then makes another
	// instance, under a new name, for as long as the job is queued.
	MaxCreateAttempts int
	// ProviderTimeout bounds provider calls other than create for pools that
	// set none. Default 5m.
	ProviderTimeout time.Duration
	// CreatingTimeout is how long an instance may stay in creating before
	// the reconciler treats its worker as dead; zero means the pool's
	// bootstrap timeout. On Lambda it is the worker function's timeout: no
	// worker outlives that.
	CreatingTimeout time.Duration
	// TakeoverGrace is how long past its bound unfinished work may sit
	// before the reconciler takes it over: a pending create or delete
	// whose message looks lost is re-sent, creating past CreatingTimeout
	// and deleting past the provider timeout are recovered. It is also the
	// margin for clocks that disagree: the bound is measured from a time
	// another process may have written. Default DefaultTakeoverGrace.
	TakeoverGrace time.Duration
	// ConfirmWindow is how far apart two "not busy" readings of an active
	// runner must be before it is reaped (default 30s).
	ConfirmWindow time.Duration
	// MetadataURL and CallbackURL are the bases of the runner bootstrap
	// endpoints; with InstanceToken set, providers get them with the
	// instance name appended (InstanceURL), see bootstrap.go.
	MetadataURL string
	CallbackURL string
	// InstanceToken mints the token a booting machine uses against the
	// metadata endpoints; nil means no token is issued (and no runner
	// credentials are stored).
	InstanceToken func(inst, pool string, createAttempt int, ttl time.Duration) (string, error)
	// Deliveries, when set, makes each reconcile pass recover the
	// webhook deliveries GitHub failed to make (reconcile_deliveries.go).
	// Nil when there is no delivery log to read (token auth).
	Deliveries *DeliveryRecovery
	// Prices, when set, prices each machine when its instance is deleted
	// (runner.Instance.Cost); nil records no costs.
	Prices Prices
	// Memory, when set, is shared with other engines (see Memory); nil
	// gives this engine its own.
	Memory *Memory
}

// Engine runs runfleet's use cases over its ports. It is safe for
// concurrent use: all coordination goes through conditional store writes.
type Engine struct {
	*Registrar
	providers map[string]providers.Provider
	// opts holds the work side's settings, defaults applied. The lower
	// tiers' part is left zero: their settings are read from the tiers,
	// which applied the defaults (e.controllerID, e.observer, e.now).
	opts   Options
	memory *Memory
	// deliveries is Options.Deliveries with its defaults; nil = off.
	deliveries *DeliveryRecovery
}

// Memory is what an engine keeps between uses that would cost a call to
// fetch again: each owner's runner downloads (downloads.go) and each
// pool's spot breaker reading (spotbreaker.go). Options.Memory lets
// engines built one after another — one per Lambda invocation, for its
// logger — share it, so a warm execution environment does not ask GitHub
// for the downloads on every create.
type Memory struct {
	downloads downloadsCache
	breakers  breakerCache
	// warm is each adaptive pool's last warm size (warmsize.go).
	warm warmSizes
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

// New checks the options and applies defaults.
func New(opts Options) (*Engine, error) {
	for _, p := range opts.Pools {
		if opts.Providers[p.Name] == nil {
			return nil, fmt.Errorf("engine: pool %q has no provider", p.Name)
		}
	}
	registrar, err := NewRegistrar(opts.RegistrarOptions)
	if err != nil {
		return nil, err
	}
	if opts.MaxCreateAttempts <= 0 {
		opts.MaxCreateAttempts = 3
	}
	if opts.ProviderTimeout <= 0 {
		opts.ProviderTimeout = 5 * time.Minute
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.ConfirmWindow <= 0 {
		opts.ConfirmWindow = 30 * time.Second
	}
	if opts.TakeoverGrace <= 0 {
		opts.TakeoverGrace = DefaultTakeoverGrace
	}
	if opts.Memory == nil {
		opts.Memory = NewMemory()
	}
	var deliveries *DeliveryRecovery
	if opts.Deliveries != nil {
		if deliveries, err = opts.Deliveries.withDefaults(); err != nil {
			return nil, err
		}
	}
	opts.RegistrarOptions = RegistrarOptions{}
	return &Engine{
		Registrar:  registrar,
		providers:  opts.Providers,
		opts:       opts,
		memory:     opts.Memory,
		deliveries: deliveries,
	}, nil
}

// Outcome says what the engine did with one job event.
type Outcome struct {
	Action   string `json:"action"`
	Result   string `json:"result"`
	Instance string `json:"instance,omitempty"`
	Pool     string `json:"pool,omitempty"`
	// Reason says why, for a result that has one: a shape refusal's
	// runner.Refused* reason.
	Reason string `json:"reason,omitempty"`
}

// Results an Outcome can carry.
const (
	ResultCreated          = "instance_created"
	ResultDuplicate        = "duplicate"
	ResultNoMatchingPool   = "no_matching_pool"
	ResultAwaitingCapacity = "awaiting_capacity"
	ResultBound            = "runner_bound"
	ResultDeleteScheduled  = "delete_scheduled"
	ResultRecorded         = "recorded"
	ResultIgnored          = "ignored"
	// ResultJobSettled: the job was served, closed or expired already, so
	// the event makes nothing (a late or redelivered queued).
	ResultJobSettled = "job_settled"
	// ResultBackingOff: the job's last instance ended a moment ago; the
	// next is made when its backoff is over.
	ResultBackingOff = "backing_off"
	// ResultStale: the event is older than what the ledger knows of its
	// job (a scale-set message the broker delivered late), so it changes
	// nothing; Reason says how it was told.
	ResultStale = "stale"
)

// providerTimeout bounds a pool's provider calls other than create.
func (e *Engine) providerTimeout(pool string) time.Duration {
	if p, ok := e.pools.Get(pool); ok && p.ProviderTimeout > 0 {
		return p.ProviderTimeout
	}
	return e.opts.ProviderTimeout
}
