// Package cost prices runner machines and sums what they cost. Prices come
// from the table in config first (an operator's word wins: negotiated
// rates, savings plans, external providers whose machines AWS cannot
// price), then from the pool's provider when it can read its cloud's
// prices (providers.PriceReader: EC2's Price List API and spot price
// history), cached.
package cost

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// DefaultCacheTTL is how long a price read from a provider is used before
// it is read again. Spot prices move at most a few times a day.
const DefaultCacheTTL = 6 * time.Hour

// Table is the configured prices: a flat price per pool (its one machine,
// whatever the provider reports), then per machine type and market.
type Table struct {
	// Pools maps a pool's name to its machines' USD per hour.
	Pools map[string]float64
	// Machines maps MachineKey(type, market) to USD per hour.
	Machines map[string]float64
}

// MachineKey is Table.Machines' key for a machine type in a market. An
// empty market is on-demand: a provider that does not say sells no spot.
func MachineKey(machineType, market string) string {
	if market == "" {
		market = providers.MarketOnDemand
	}
	return strings.ToLower(machineType) + "/" + market
}

// Lookup returns the table's price of a machine of pool.
func (t Table) Lookup(pool, machineType, market string) (float64, bool) {
	if usd, ok := t.Pools[pool]; ok {
		return usd, true
	}
	if machineType == "" {
		return 0, false
	}
	usd, ok := t.Machines[MachineKey(machineType, market)]
	return usd, ok
}

// Prices is the engine's price source (engine.Prices): the table, then the
// pool's provider reader through a cache. It is safe for concurrent use.
type Prices struct {
	table   Table
	readers map[string]providers.PriceReader
	ttl     time.Duration
	now     func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	usd  float64
	err  error
	read time.Time
}

// NewPrices returns the price source over table and the pools' price
// readers (by pool name; a pool without one is priced by the table only).
// ttl <= 0 is DefaultCacheTTL; now nil is time.Now.
func NewPrices(table Table, readers map[string]providers.PriceReader, ttl time.Duration, now func() time.Time) *Prices {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Prices{table: table, readers: readers, ttl: ttl, now: now, cache: map[string]cached{}}
}

// HourlyPriceUSD prices one machine of pool, or says why it cannot.
func (p *Prices) HourlyPriceUSD(ctx context.Context, pool, machineType, market string) (float64, error) {
	if usd, ok := p.table.Lookup(pool, machineType, market); ok {
		return usd, nil
	}
	reader := p.readers[pool]
	if reader == nil || machineType == "" {
		return 0, fmt.Errorf("no price for pool %q machine %q (%s): set pools[].cost.usd_per_hour or add it to the prices table", pool, machineType, marketOrDefault(market))
	}
	key := pool + "|" + MachineKey(machineType, market)
	now := p.now()
	p.mu.Lock()
	hit, ok := p.cache[key]
	p.mu.Unlock()
	// A failed read is cached too, for a shorter while: a type AWS does
	// not price must not cost an API call per deleted machine.
	if ok && now.Sub(hit.read) < p.ttlOf(hit) {
		return hit.usd, hit.err
	}
	usd, err := reader.HourlyPriceUSD(ctx, machineType, market)
	if ctx.Err() == nil {
		p.mu.Lock()
		p.cache[key] = cached{usd: usd, err: err, read: now}
		p.mu.Unlock()
	}
	return usd, err
}

func (p *Prices) ttlOf(c cached) time.Duration {
	if c.err != nil {
		return min(p.ttl, 5*time.Minute)
	}
	return p.ttl
}

func marketOrDefault(market string) string {
	if market == "" {
		return providers.MarketOnDemand
	}
	return market
}
