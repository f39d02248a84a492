package simulated

import (
	"context"
	"sort"
	"time"

	"github.com/runfleet/runfleet/providers"
)

var _ providers.InterruptionLister = (*Provider)(nil)

// Interrupt plays the provider taking a machine back (a spot
// interruption): the machine, by provider id or name, is gone — get and
// list no longer see it, a delete of it is a no-op — and ListInterrupted
// reports it, with no termination time. It reports whether the machine
// existed.
func (p *Provider) Interrupt(instance string) bool {
	return p.InterruptAt(instance, time.Time{})
}

// InterruptAt is Interrupt with the termination time ListInterrupted
// reports for the machine (TakenBackAt), as EC2's does.
func (p *Provider) InterruptAt(instance string, at time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.lookupLocked(instance)
	if !ok {
		return false
	}
	delete(p.machines, m.Name)
	m.TakenBackAt = at
	if p.reclaimed == nil {
		p.reclaimed = map[string]*machine{}
	}
	p.reclaimed[m.Name] = m
	return true
}

// ListInterrupted implements providers.InterruptionLister: the machines of
// the pool taken back with Interrupt, sorted by name.
func (p *Provider) ListInterrupted(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, &providers.Error{Op: "ListInterrupted", Instance: poolID, Fault: "cancelled", Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providers.Instance
	for _, m := range p.reclaimed {
		if m.poolID == poolID {
			out = append(out, m.snapshot())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
