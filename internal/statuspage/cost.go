package statuspage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/runner"
)

// deletedLister is the optional ability of a Source to list the deleted
// instances the store keeps (*engine.Engine has it; on a store that
// cannot list them it answers engine.ErrDeletedNotListed).
type deletedLister interface {
	ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error)
}

// costRefresh is how long one reading of the pools' costs is shown: the
// page reloads every few seconds, and the deleted instances of a week are
// the largest read the store serves.
const costRefresh = time.Minute

// poolCosts keeps the last reading of what each pool cost over the
// deleted instances the store keeps (runfleet cost's pool table).
type poolCosts struct {
	mu     sync.Mutex
	readAt time.Time
	pools  map[string]cost.Row
	ok     bool
}

// read returns each pool's cost, and false when the source cannot list
// deleted instances (or the read failed: the page still shows the rest).
func (c *poolCosts) read(ctx context.Context, src Source, at time.Time) (map[string]cost.Row, bool) {
	lister, ok := src.(deletedLister)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if age := at.Sub(c.readAt); !c.readAt.IsZero() && age >= 0 && age < costRefresh {
		return c.pools, c.ok
	}
	deleted, err := lister.ListDeletedInstances(ctx, "")
	c.readAt, c.ok, c.pools = at, err == nil, map[string]cost.Row{}
	if err != nil {
		return nil, false
	}
	for _, r := range cost.Summarize(deleted).Pools {
		c.pools[r.Key] = r
	}
	return c.pools, true
}

// setCosts words each pool row's cost; "n/a" when it cannot be read.
func setCosts(rows []poolRow, costs map[string]cost.Row, listed bool) {
	for i := range rows {
		r := &rows[i]
		if !listed {
			r.Cost = "n/a"
			continue
		}
		c := costs[r.Name]
		r.CostUSD, r.CostUnknown = c.USD, c.Unknown
		r.Cost = fmt.Sprintf("$%.2f", c.USD)
		if c.USD > 0 && c.USD < 0.005 {
			r.Cost = "<$0.01"
		}
		if c.Unknown > 0 {
			r.Cost += fmt.Sprintf(" (+%d unpriced)", c.Unknown)
		}
	}
}
