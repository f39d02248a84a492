package spread

import (
	"context"
	"errors"
	"maps"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/rest"
)

// errNoDeliveryLog: the first App's client keeps no delivery log.
var errNoDeliveryLog = errors.New("spread: the first App's client reads no delivery log")

// ListDeliveries reads the first App's webhook delivery log: it is the
// App whose webhooks runfleet receives.
func (g *GitHub) ListDeliveries(ctx context.Context, cursor string) ([]github.Delivery, string, error) {
	log, ok := g.apps[0].(github.DeliveryLog)
	if !ok {
		return nil, "", errNoDeliveryLog
	}
	return log.ListDeliveries(ctx, cursor)
}

// GetDelivery reads one delivery of the first App's log.
func (g *GitHub) GetDelivery(ctx context.Context, id int64) (*github.Delivery, error) {
	log, ok := g.apps[0].(github.DeliveryLog)
	if !ok {
		return nil, errNoDeliveryLog
	}
	return log.GetDelivery(ctx, id)
}

// HookDeliveries reads an organization's or repository's webhook log
// through the first App (its installation on the hook's owner): its
// budget pays for recovery as it pays for the App log's.
func (g *GitHub) HookDeliveries(h github.Hook) github.DeliveryLog {
	if logs, ok := g.apps[0].(github.HookDeliveryLogs); ok {
		return logs.HookDeliveries(h)
	}
	return noHookLog{}
}

// noHookLog answers for a first App whose client reads no webhook logs.
type noHookLog struct{}

func (noHookLog) ListDeliveries(context.Context, string) ([]github.Delivery, string, error) {
	return nil, "", errNoDeliveryLog
}

func (noHookLog) GetDelivery(context.Context, int64) (*github.Delivery, error) {
	return nil, errNoDeliveryLog
}

// telemetry is what each App's rest client reports about its calls.
type telemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// Calls sums every App's calls.
func (g *GitHub) Calls() rest.CallCounts {
	sum := rest.CallCounts{ByOperation: map[string]int64{}, ByResult: map[rest.CallKey]int64{}}
	for _, a := range g.apps {
		t, ok := a.(telemetry)
		if !ok {
			continue
		}
		c := t.Calls()
		sum.Total += c.Total
		for k, v := range c.ByOperation {
			sum.ByOperation[k] += v
		}
		for k, v := range c.ByResult {
			sum.ByResult[k] += v
		}
	}
	return sum
}

// RateLimits joins every App's installations' primary budgets
// (installation ids are unique across Apps).
func (g *GitHub) RateLimits() map[int64]rest.RateLimit {
	out := map[int64]rest.RateLimit{}
	for _, a := range g.apps {
		if t, ok := a.(telemetry); ok {
			maps.Copy(out, t.RateLimits())
		}
	}
	return out
}

// refusals is what an App's rest client reports of GitHub refusing it.
type refusals interface {
	AppRefusals() map[int64]int
}

// AppRefusals joins every App's count of the owners and installations
// GitHub refuses it on (runfleet_github_app_refused).
func (g *GitHub) AppRefusals() map[int64]int {
	out := map[int64]int{}
	for _, a := range g.apps {
		if r, ok := a.(refusals); ok {
			maps.Copy(out, r.AppRefusals())
		}
	}
	return out
}

var (
	_ github.DeliveryLog      = (*GitHub)(nil)
	_ github.HookDeliveryLogs = (*GitHub)(nil)
)
