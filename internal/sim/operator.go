package sim

import (
	"context"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
)

// ForceDeleter is implemented by a Controller that offers the operator's
// forced delete.
type ForceDeleter interface {
	ForceDelete(ctx context.Context, instance string) error
}

// operatorForceDelete force-deletes a random live instance, as an operator
// would with `runfleet instances delete NAME --force`: its machine may go
// down under a running job.
func (w *world) operatorForceDelete(p *process) {
	fd, ok := p.ctl.(ForceDeleter)
	if !ok {
		return
	}
	live, err := p.state.Store.ListLiveInstances(context.Background())
	if err != nil || len(live) == 0 {
		return
	}
	slices.SortFunc(live, func(a, b *runner.Instance) int { return strings.Compare(a.Name, b.Name) })
	name := live[w.rng.IntN(len(live))].Name
	w.forced[name] = true
	w.stats.inc("operator.force_deletes")
	p.spawn("operator force-delete "+name, func(ctx context.Context) {
		err := fd.ForceDelete(ctx, name)
		w.tr.add("operator force-delete %s%s", name, result(err))
	})
}
