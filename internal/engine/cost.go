package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Prices is the port to machine prices (internal/cost: the config table,
// then the provider's cloud, cached).
type Prices interface {
	// HourlyPriceUSD prices one machine of pool (machineType and market as
	// the provider reported them, possibly empty), or says why it cannot.
	HourlyPriceUSD(ctx context.Context, pool, machineType, market string) (float64, error)
}

// priceTimeout bounds a price read at delete time: a slow pricing API
// costs a cost, never a delete.
const priceTimeout = 10 * time.Second

// priceOf reads the price of the claimed instance's machine for its cost
// (runner.CostOf); nil when costs are not tracked (no Prices). A missing
// price is a Price with its error: the cost is recorded unknown, logged
// here, and the delete goes on.
func (e *Engine) priceOf(ctx context.Context, log *slog.Logger, inst *runner.Instance) *runner.Price {
	if e.opts.Prices == nil {
		return nil
	}
	if inst.MachineAt.IsZero() {
		return &runner.Price{} // no machine was made: it cost nothing
	}
	ctx, cancel := context.WithTimeout(ctx, priceTimeout)
	defer cancel()
	usd, err := e.opts.Prices.HourlyPriceUSD(ctx, inst.Pool, inst.MachineType, inst.Market)
	if err != nil {
		log.Warn("no price for the machine; its cost is recorded as unknown",
			"machine_type", inst.MachineType, "market", inst.Market, "error", err)
	}
	return &runner.Price{USDPerHour: usd, Err: err}
}

// costAttrs adds a deleted instance's cost to a log line's attributes.
func costAttrs(c *runner.Cost, attrs ...any) []any {
	switch {
	case c == nil:
		return attrs
	case c.Known():
		return append(attrs, "cost_usd", c.USD, "run_seconds", c.Seconds)
	default:
		return append(attrs, "cost_unknown", c.Unknown, "run_seconds", c.Seconds)
	}
}
