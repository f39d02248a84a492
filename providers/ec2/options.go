package ec2

import (
	"log/slog"
	"time"
)

// Option adjusts a Provider at construction (New, NewWithConfig).
type Option func(*Provider)

// WithLogger sets the logger of launch attempts and warm pool refills;
// the default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(p *Provider) {
		if l != nil {
			p.log = l
		}
	}
}

// WithFailoverHook calls f each time a create moves on from a launch
// choice EC2 had no capacity for, with the pool's name and the EC2 error
// code (InsufficientInstanceCapacity, SpotMaxPriceTooLow, …): the
// runfleet_capacity_failovers_total{pool,reason} counter. f must not block.
func WithFailoverHook(f func(pool, reason string)) Option {
	return func(p *Provider) { p.onFailover = f }
}

// WithWarmClaimSettle sets the pause between writing a warm machine's
// claim tag and reading the claims back (default defaultClaimSettle). It
// covers EC2's eventual consistency: a claim must be visible to a
// concurrent claimer's read-back before either decides it won.
func WithWarmClaimSettle(d time.Duration) Option {
	return func(p *Provider) { p.claimSettle = max(d, 0) }
}

// NotifyFailovers implements providers.FailoverNotifier: the same as
// WithFailoverHook, for wiring that builds the hook after the provider.
func (p *Provider) NotifyFailovers(f func(pool, reason string)) { p.onFailover = f }
