// Package simulated is an in-process compute provider for demos, tests and
// benchmarks: machines are records in memory, and latency and failures are
// injected on demand (fixed and random latency, failure rates, calls that
// always fail or never return, half-made machines). Nothing real is ever
// started.
package simulated

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// Type is the provider type name in config (pools[].provider.type).
const Type = "simulated"

var _ providers.Provider = (*Provider)(nil)

// Provider is a simulated providers.Provider. It is safe for concurrent use.
type Provider struct {
	createLatency time.Duration
	deleteLatency time.Duration
	jitter        time.Duration

	mu       sync.Mutex
	faults   Faults
	rng      *rand.Rand
	seq      int
	machines map[string]*machine // by name
	// idNames maps every provider id ever issued to its machine's name, so
	// calls by id are counted per name even after the machine is gone.
	idNames map[string]string
	stats   Stats
	creates map[string]int
	deletes map[string]int
	// reclaimed are the machines the provider took back (Interrupt), by
	// name: gone, yet reported by ListInterrupted.
	reclaimed map[string]*machine
}

// New builds a provider from a pool's provider settings (see ParseSettings).
func New(settings map[string]any) (*Provider, error) {
	opts, err := ParseSettings(settings)
	if err != nil {
		return nil, fmt.Errorf("simulated provider: %w", err)
	}
	return NewWithOptions(opts), nil
}

// NewWithOptions builds a provider from options.
func NewWithOptions(o Options) *Provider {
	return &Provider{
		createLatency: o.CreateLatency,
		deleteLatency: o.DeleteLatency,
		jitter:        o.LatencyJitter,
		faults:        o.Faults,
		rng:           rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		machines:      make(map[string]*machine),
		idNames:       make(map[string]string),
		creates:       make(map[string]int),
		deletes:       make(map[string]int),
	}
}

// SetFaults replaces the injected faults for calls that start from now on.
func (p *Provider) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Faults returns the faults currently injected.
func (p *Provider) Faults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// plan is what one call will do, drawn under the lock so a seed gives the
// same sequence of decisions.
type plan struct {
	fail  bool
	hang  bool
	delay time.Duration
}

func (p *Provider) planLocked(latency time.Duration, rate float64, always, hang bool) plan {
	pl := plan{fail: always, hang: hang, delay: latency}
	// Draw even when the outcome is forced, so toggling a fault does not
	// shift the rest of the seeded sequence.
	if roll := p.rng.Float64(); roll < rate {
		pl.fail = true
	}
	if p.jitter > 0 {
		pl.delay += time.Duration(p.rng.Int64N(int64(p.jitter) + 1))
	}
	return pl
}

// wait sleeps d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// lookupLocked finds a machine by provider id or name (GARM's contract:
// either may be passed).
func (p *Provider) lookupLocked(instance string) (*machine, bool) {
	if name, ok := p.idNames[instance]; ok {
		m, ok := p.machines[name]
		return m, ok && m.ProviderID == instance
	}
	m, ok := p.machines[instance]
	return m, ok
}

// nameOfLocked is the machine name a call's instance argument refers to.
func (p *Provider) nameOfLocked(instance string) string {
	if name, ok := p.idNames[instance]; ok {
		return name
	}
	return instance
}

// Machines returns a snapshot of every machine, sorted by name.
func (p *Provider) Machines() []providers.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshotLocked(func(*machine) bool { return true })
}

func (p *Provider) snapshotLocked(keep func(*machine) bool) []providers.Instance {
	out := make([]providers.Instance, 0, len(p.machines))
	for _, m := range p.machines {
		if keep(m) {
			out = append(out, m.snapshot())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// machine is one simulated machine and the provider-side id of the pool it
// was created for (what ListInstances selects by).
type machine struct {
	providers.Instance
	poolID string
}

// snapshot is a copy the caller may keep and change.
func (m *machine) snapshot() providers.Instance {
	c := m.Instance
	c.Addresses = append([]providers.Address(nil), m.Addresses...)
	return c
}
