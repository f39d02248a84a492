package simulated

import (
	"context"
	"fmt"

	"github.com/runfleet/runfleet/providers"
)

// Faults recorded on failed calls, so tests and operators can tell injected
// failures from real ones.
const (
	FaultCreateFailed = "simulated create failure"
	FaultDeleteFailed = "simulated delete failure"
	FaultHung         = "simulated hang: the call never returned"
)

// CreateInstance makes a running machine named req.Name. A name already in
// use is a duplicate error (GARM's exit code 31), like a cloud that refuses
// a second machine with the same name.
func (p *Provider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	p.mu.Lock()
	p.stats.Creates++
	p.creates[req.Name]++
	f := p.faults
	pl := p.planLocked(p.createLatency, f.CreateFailureRate, f.AlwaysFailCreate, f.HangCreates)
	p.mu.Unlock()

	if req.Name == "" || req.PoolID == "" {
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: "create request needs a name and a pool id"}
	}
	if pl.hang {
		p.count(func(s *Stats) { s.Hangs++ })
		<-ctx.Done()
		if f.LeaveFailedMachines {
			p.leaveHalfMade(req, FaultHung)
		}
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: FaultHung, Err: ctx.Err()}
	}
	if err := wait(ctx, pl.delay); err != nil {
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: "cancelled", Err: err}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if _, exists := p.machines[req.Name]; exists {
		p.stats.CreateFailures++
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: fmt.Sprintf("duplicate: a machine named %s already exists", req.Name)}
	}
	if pl.fail {
		p.stats.CreateFailures++
		if f.FailCreateAsStatus {
			return p.addLocked(req, providers.StatusError, FaultCreateFailed).snapshot(), nil
		}
		if f.LeaveFailedMachines {
			p.addLocked(req, providers.StatusError, FaultCreateFailed)
		}
		return providers.Instance{}, &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: FaultCreateFailed}
	}
	return p.addLocked(req, providers.StatusRunning, "").snapshot(), nil
}

func (p *Provider) leaveHalfMade(req providers.CreateRequest, fault string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, exists := p.machines[req.Name]; !exists {
		p.addLocked(req, providers.StatusError, fault)
	}
}

func (p *Provider) addLocked(req providers.CreateRequest, status providers.MachineStatus, fault string) *machine {
	p.seq++
	id := fmt.Sprintf("sim-%06d-%08x", p.seq, p.rng.Uint32())
	m := &machine{poolID: req.PoolID, Instance: providers.Instance{
		ProviderID: id,
		Name:       req.Name,
		Status:     status,
		OSType:     req.OSType,
		OSArch:     req.Arch,
		OSName:     "simulated",
		Addresses:  []providers.Address{{Address: fmt.Sprintf("192.0.2.%d", p.seq%254+1), Type: "private"}},
		Fault:      fault,
	}}
	p.machines[req.Name] = m
	p.idNames[id] = req.Name
	return m
}

// DeleteInstance removes a machine by provider id or name; an unknown one is
// already gone, which is success.
func (p *Provider) DeleteInstance(ctx context.Context, instance string) error {
	p.mu.Lock()
	p.stats.Deletes++
	p.deletes[p.nameOfLocked(instance)]++
	f := p.faults
	pl := p.planLocked(p.deleteLatency, f.DeleteFailureRate, f.AlwaysFailDelete, f.HangDeletes)
	p.mu.Unlock()

	if pl.hang {
		p.count(func(s *Stats) { s.Hangs++ })
		<-ctx.Done()
		return &providers.Error{Op: providers.OpDelete, Instance: instance, Fault: FaultHung, Err: ctx.Err()}
	}
	if err := wait(ctx, pl.delay); err != nil {
		return &providers.Error{Op: providers.OpDelete, Instance: instance, Fault: "cancelled", Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl.fail {
		p.stats.DeleteFailures++
		return &providers.Error{Op: providers.OpDelete, Instance: instance, Fault: FaultDeleteFailed}
	}
	if m, ok := p.lookupLocked(instance); ok {
		delete(p.machines, m.Name)
	}
	return nil
}

// GetInstance returns a machine by provider id or name, or an error that
// is providers.ErrNotFound.
func (p *Provider) GetInstance(ctx context.Context, instance string) (providers.Instance, error) {
	if err := ctx.Err(); err != nil {
		return providers.Instance{}, &providers.Error{Op: providers.OpGet, Instance: instance, Fault: "cancelled", Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Gets++
	m, ok := p.lookupLocked(instance)
	if !ok {
		return providers.Instance{}, notFound(providers.OpGet, instance)
	}
	return m.snapshot(), nil
}

// ListInstances returns the machines created with this pool id, sorted by
// name.
func (p *Provider) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, &providers.Error{Op: providers.OpList, Instance: poolID, Fault: "cancelled", Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Lists++
	return p.snapshotLocked(func(m *machine) bool { return m.poolID == poolID }), nil
}

// RemoveAllInstances removes every machine. Delete faults apply: with
// deletes failing it removes nothing and returns the failure.
func (p *Provider) RemoveAllInstances(ctx context.Context) error {
	p.mu.Lock()
	p.stats.RemoveAlls++
	f := p.faults
	pl := p.planLocked(p.deleteLatency, f.DeleteFailureRate, f.AlwaysFailDelete, f.HangDeletes)
	p.mu.Unlock()

	if pl.hang {
		p.count(func(s *Stats) { s.Hangs++ })
		<-ctx.Done()
		return &providers.Error{Op: providers.OpRemoveAll, Fault: FaultHung, Err: ctx.Err()}
	}
	if err := wait(ctx, pl.delay); err != nil {
		return &providers.Error{Op: providers.OpRemoveAll, Fault: "cancelled", Err: err}
	}
	if pl.fail {
		p.count(func(s *Stats) { s.DeleteFailures++ })
		return &providers.Error{Op: providers.OpRemoveAll, Fault: FaultDeleteFailed}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.machines)
	return nil
}

// StartInstance marks a machine running.
func (p *Provider) StartInstance(ctx context.Context, instance string) error {
	return p.setStatus(ctx, providers.OpStart, instance, providers.StatusRunning, func(s *Stats) { s.Starts++ })
}

// StopInstance marks a machine stopped.
func (p *Provider) StopInstance(ctx context.Context, instance string) error {
	return p.setStatus(ctx, providers.OpStop, instance, providers.StatusStopped, func(s *Stats) { s.Stops++ })
}

func (p *Provider) setStatus(ctx context.Context, op, instance string, status providers.MachineStatus, tally func(*Stats)) error {
	if err := ctx.Err(); err != nil {
		return &providers.Error{Op: op, Instance: instance, Fault: "cancelled", Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	tally(&p.stats)
	m, ok := p.lookupLocked(instance)
	if !ok {
		return notFound(op, instance)
	}
	m.Status = status
	m.Fault = ""
	return nil
}

func notFound(op, instance string) error {
	return &providers.Error{Op: op, Instance: instance, Fault: "no such machine", Err: providers.ErrNotFound}
}

func (p *Provider) count(tally func(*Stats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tally(&p.stats)
}
