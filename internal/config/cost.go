package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
)

// PoolCost prices a pool's machines and bounds what it may spend.
type PoolCost struct {
	// USDPerHour is the price of one of the pool's machines, whatever the
	// provider reports it to be: an external provider's pool (one flavor
	// each), or a rate agreed with the cloud. 0: the prices table, then
	// the provider's own (EC2: the Price List API, spot price history).
	USDPerHour float64 `yaml:"usd_per_hour"`
	// MonthlyBudgetUSD, when > 0, warns (a log line and
	// runfleet_cost_budget_exceeded) once the pool's cost this calendar
	// month (UTC) passes it.
	MonthlyBudgetUSD float64 `yaml:"monthly_budget_usd"`
}

// Price is one row of the prices table: a machine type in a market.
type Price struct {
	InstanceType string `yaml:"instance_type"`
	// Market: "on-demand" (the default) or "spot".
	Market     string  `yaml:"market"`
	USDPerHour float64 `yaml:"usd_per_hour"`
}

// MarketOrDefault is the row's market, on-demand when unset.
func (pr Price) MarketOrDefault() string {
	if pr.Market == "" {
		return runner.MarketOnDemand
	}
	return pr.Market
}

func validPrice(usd float64) bool { return usd >= 0 && !math.IsInf(usd, 0) && !math.IsNaN(usd) }

func (c *Config) validatePrices(p *problems) {
	seen := map[string]int{}
	for i, pr := range c.Prices {
		field := fmt.Sprintf("prices[%d]", i)
		if pr.InstanceType == "" {
			p.add(field+".instance_type", "required (an instance type, e.g. m7g.large)")
		}
		if m := pr.MarketOrDefault(); m != runner.MarketOnDemand && m != runner.MarketSpot {
			p.add(field+".market", "%q: must be %q or %q", pr.Market, runner.MarketOnDemand, runner.MarketSpot)
		}
		if !validPrice(pr.USDPerHour) || pr.USDPerHour == 0 {
			p.add(field+".usd_per_hour", "must be > 0")
		}
		key := strings.ToLower(pr.InstanceType) + "/" + pr.MarketOrDefault()
		if j, dup := seen[key]; dup {
			p.add(field, "prices %s %s again (first at prices[%d])", pr.InstanceType, pr.MarketOrDefault(), j)
		}
		seen[key] = i
	}
	for i, pool := range c.Pools {
		if !validPrice(pool.Cost.USDPerHour) {
			p.add(poolField(i, "cost.usd_per_hour"), "must be ≥ 0 (0: the prices table or the provider's price)")
		}
		if !validPrice(pool.Cost.MonthlyBudgetUSD) {
			p.add(poolField(i, "cost.monthly_budget_usd"), "must be ≥ 0 (0: no budget)")
		}
	}
}
