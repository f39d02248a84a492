package metrics_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// Observing a provider must not hide what it can do besides the port: the
// engine finds a decorated provider's optional abilities through
// providers.As (a plain type assertion on the decorator would find none,
// and warm pools would never refill nor interruptions be polled).
func TestObservedProvidersKeepTheirAbilities(t *testing.T) {
	sim, err := simulated.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	observed := metrics.ObserveProviders(map[string]providers.Provider{"p": sim}, &calls{})["p"]
	if _, direct := observed.(providers.InterruptionLister); direct {
		t.Fatal("the decorator itself lists interruptions; this test no longer checks the lookup")
	}
	lister, ok := providers.As[providers.InterruptionLister](observed)
	if !ok || lister != providers.InterruptionLister(sim) {
		t.Fatalf("As found %v, %v; want the simulated provider under the decorator", lister, ok)
	}
	if _, ok := providers.As[providers.WarmPool](observed); ok {
		t.Fatal("As found a warm pool the simulated provider does not have")
	}
}

// A provider that reports capacity failovers is told where to, once, when
// it is observed.
func TestObserveProvidersHandsFailoverNotifiersTheCounter(t *testing.T) {
	rec := &failovers{}
	p := &failoverProvider{Provider: simulated.NewWithOptions(simulated.Options{})}
	metrics.ObserveProviders(map[string]providers.Provider{"p": p}, rec)
	if p.notify == nil {
		t.Fatal("the provider was given no failover hook")
	}
	p.notify("p", "InsufficientInstanceCapacity")
	if len(rec.seen) != 1 || rec.seen[0] != "p InsufficientInstanceCapacity" {
		t.Fatalf("recorded failovers %v, want the one reported", rec.seen)
	}
}

type failovers struct {
	metrics.Nop
	seen []string
}

func (f *failovers) CapacityFailover(pool, reason string) { f.seen = append(f.seen, pool+" "+reason) }

type failoverProvider struct {
	providers.Provider
	notify func(pool, reason string)
}

func (f *failoverProvider) NotifyFailovers(fn func(pool, reason string)) { f.notify = fn }
