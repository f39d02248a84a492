package config_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

func TestCostIsReadPerPoolAndPricesAtTheTop(t *testing.T) {
	yaml := replace(t, "    max_runners: 3\n", "    max_runners: 3\n    cost:\n      usd_per_hour: 1.2\n      monthly_budget_usd: 500\n") +
		"prices:\n  - {instance_type: m7g.large, usd_per_hour: 0.0816}\n  - {instance_type: m7g.large, market: spot, usd_per_hour: 0.03}\n"
	cfg, err := parse(t, yaml, defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Pools[0].Cost, (config.PoolCost{USDPerHour: 1.2, MonthlyBudgetUSD: 500}); got != want {
		t.Fatalf("cost = %+v, want %+v", got, want)
	}
	if len(cfg.Prices) != 2 || cfg.Prices[0].MarketOrDefault() != "on-demand" || cfg.Prices[1].Market != "spot" {
		t.Fatalf("prices = %+v", cfg.Prices)
	}
}

func TestCostProblems(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"negative pool price", replace(t, "    max_runners: 3\n", "    max_runners: 3\n    cost: {usd_per_hour: -1}\n"),
			[]string{"pools[0].cost.usd_per_hour: must be ≥ 0 (0: the prices table or the provider's price)"}},
		{"negative budget", replace(t, "    max_runners: 3\n", "    max_runners: 3\n    cost: {monthly_budget_usd: -5}\n"),
			[]string{"pools[0].cost.monthly_budget_usd: must be ≥ 0 (0: no budget)"}},
		{"price row without a type or price", validYAML + "prices:\n  - {market: spot}\n",
			[]string{"prices[0].instance_type: required (an instance type, e.g. m7g.large)", "prices[0].usd_per_hour: must be > 0"}},
		{"unknown market", validYAML + "prices:\n  - {instance_type: t3.large, market: reserved, usd_per_hour: 0.05}\n",
			[]string{`prices[0].market: "reserved": must be "on-demand" or "spot"`}},
		{"a type twice in one market", validYAML + "prices:\n  - {instance_type: t3.large, usd_per_hour: 0.08}\n  - {instance_type: T3.large, market: on-demand, usd_per_hour: 0.09}\n",
			[]string{"prices[1]: prices T3.large on-demand again (first at prices[0])"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parse(t, c.yaml, defaultEnv())
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			assertMessages(t, err, c.want...)
		})
	}
}
