package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/providers"
)

// Prices is the engine's price source for cfg's pools: the config's
// prices (pools[].cost.usd_per_hour, then prices:), then each pool
// provider's own when it can read them (providers.PriceReader), cached
// for cost.DefaultCacheTTL. Build it once per process (or Lambda
// execution environment): the cache lives in it.
func Prices(cfg *config.Config, provs map[string]providers.Provider) *cost.Prices {
	table := cost.Table{Pools: map[string]float64{}, Machines: map[string]float64{}}
	for _, p := range cfg.Pools {
		if p.Cost.USDPerHour > 0 {
			table.Pools[p.Name] = p.Cost.USDPerHour
		}
	}
	for _, pr := range cfg.Prices {
		table.Machines[cost.MachineKey(pr.InstanceType, pr.MarketOrDefault())] = pr.USDPerHour
	}
	readers := map[string]providers.PriceReader{}
	for name, p := range provs {
		if r, ok := providers.As[providers.PriceReader](p); ok {
			readers[name] = r
		}
	}
	return cost.NewPrices(table, readers, 0, nil)
}

// Budgets are the pools' monthly budgets in USD (pools with one only).
func Budgets(cfg *config.Config) map[string]float64 {
	out := map[string]float64{}
	for _, p := range cfg.Pools {
		if p.Cost.MonthlyBudgetUSD > 0 {
			out[p.Name] = p.Cost.MonthlyBudgetUSD
		}
	}
	return out
}
