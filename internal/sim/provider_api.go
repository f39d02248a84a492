package sim

import (
	"context"
	"errors"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// providerAPI is one pool's providers.Provider in one runfleet process.
// Its faults: a call fails before or after its effect, hangs past the
// caller's timeout (and may still take effect), or is cut off by the
// process dying mid-call (effect or not); machines boot slowly or are
// taken away (cloud.go). A pool listed in DeleteByNameNoop answers a
// delete by name with success and does nothing, as garm-provider-aws does.
type providerAPI struct {
	c    *cloud
	p    *process
	pool string
	// noopByName: delete by name succeeds without deleting.
	noopByName bool
	// timeout is what the engine waits for a call: a hung call returns
	// after it.
	createTimeout, timeout time.Duration
}

var _ providers.Provider = (*providerAPI)(nil)

type pvFault int

const (
	pvOK pvFault = iota
	pvFailBefore
	pvFailAfter
	pvHang
	pvCrash
)

// call is one provider round trip; see githubAPI.call.
func (a *providerAPI) call(ctx context.Context, op string, lo, hi time.Duration, mayFail bool) (pvFault, error) {
	w := a.c.w
	if err := a.p.enter(ctx); err != nil {
		return pvOK, errNotSent
	}
	w.stats.inc("provider.calls." + op)
	if err := a.p.sleep(ctx, between(w.rng, lo, hi)); err != nil {
		return pvOK, err
	}
	if !w.faultsOn || !mayFail {
		return pvOK, nil
	}
	f := w.cfg.Provider
	switch x := w.rng.Float64(); {
	case x < w.cfg.Crashes.PerProviderCall:
		return pvCrash, nil
	case x < w.cfg.Crashes.PerProviderCall+f.Hang:
		return pvHang, nil
	case x < w.cfg.Crashes.PerProviderCall+f.Hang+f.Fail/2:
		return pvFailBefore, nil
	case x < w.cfg.Crashes.PerProviderCall+f.Hang+f.Fail:
		return pvFailAfter, nil
	}
	return pvOK, nil
}

// settle plays out a faulty call whose effect is effect: it returns the
// error the caller sees, or nil when the call succeeds.
func (a *providerAPI) settle(ctx context.Context, op, instance string, fault pvFault, timeout time.Duration, effect func()) error {
	w := a.c.w
	coin := func() bool { return w.rng.IntN(2) == 0 }
	switch fault {
	case pvCrash:
		w.stats.inc("fault.crash.mid_provider_" + op)
		if coin() {
			effect()
		}
		a.p.die("during provider " + op + " " + instance)
		return errKilled
	case pvHang:
		w.stats.inc("fault.provider." + op + ".hang")
		if coin() {
			effect()
		}
		w.tr.add("provider %s %s hangs", op, instance)
		if err := a.p.sleep(ctx, timeout+time.Second); err != nil {
			return err
		}
		return &providers.Error{Op: op, Instance: instance, Fault: "no answer within " + timeout.String(), Err: context.DeadlineExceeded}
	case pvFailBefore:
		w.stats.inc("fault.provider." + op + ".fail_before")
		w.tr.add("provider %s %s -> error (nothing done)", op, instance)
		return &providers.Error{Op: op, Instance: instance, Fault: "InsufficientInstanceCapacity: simulated"}
	case pvFailAfter:
		w.stats.inc("fault.provider." + op + ".fail_after")
		effect()
		w.tr.add("provider %s %s -> error (after the effect)", op, instance)
		return &providers.Error{Op: op, Instance: instance, Fault: "RequestLimitExceeded: simulated, after the effect"}
	}
	effect()
	return nil
}

// CreateInstance makes a machine for req.Name.
func (a *providerAPI) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	var made *machine
	a.checkOnDemand(req)
	effect := func() { made = a.c.launch(a.pool, req.PoolID, req.Name) }
	fault, err := a.call(ctx, "create", 2*time.Second, 15*time.Second, true)
	if err != nil {
		return providers.Instance{}, a.died(err, effect)
	}
	if err := a.settle(ctx, "create", req.Name, fault, a.createTimeout, effect); err != nil {
		return providers.Instance{}, err
	}
	a.c.w.tr.add("provider create %s -> %s", req.Name, made.pid)
	return providers.Instance{ProviderID: made.pid, Name: req.Name, Status: providers.StatusRunning}, nil
}

// DeleteInstance destroys a machine by provider id, or by name.
func (a *providerAPI) DeleteInstance(ctx context.Context, target string) error {
	c := a.c
	effect := func() {
		if m := c.byPID[target]; m != nil {
			c.destroy(m, causeDelete)
			return
		}
		if a.noopByName {
			c.w.stats.inc("provider.delete_by_name_ignored")
			c.w.tr.add("provider delete %s: by name, ignored (answers success)", target)
			return
		}
		for _, m := range c.aliveByName(target) {
			c.destroy(m, causeDelete)
		}
	}
	fault, err := a.call(ctx, "delete", time.Second, 5*time.Second, true)
	if err != nil {
		return a.died(err, effect)
	}
	if err := a.settle(ctx, "delete", target, fault, a.timeout, effect); err != nil {
		return err
	}
	c.w.tr.add("provider delete %s -> ok", target)
	return nil
}

// GetInstance finds a live machine by provider id or name.
func (a *providerAPI) GetInstance(ctx context.Context, target string) (providers.Instance, error) {
	if _, err := a.call(ctx, "get", 100*time.Millisecond, time.Second, false); err != nil {
		return providers.Instance{}, err
	}
	if m := a.c.byPID[target]; m != nil && m.alive {
		return a.view(m), nil
	}
	if ms := a.c.aliveByName(target); len(ms) > 0 {
		return a.view(ms[0]), nil
	}
	return providers.Instance{}, providers.ErrNotFound
}

// ListInstances lists the live machines tagged with a pool id.
func (a *providerAPI) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	w := a.c.w
	fault, err := a.call(ctx, "list", 200*time.Millisecond, 2*time.Second, true)
	if err != nil {
		return nil, err
	}
	if err := a.settle(ctx, "list", a.pool, fault, a.timeout, func() {}); err != nil {
		return nil, err
	}
	var out []providers.Instance
	for _, m := range a.c.machines {
		if m.alive && m.poolID == poolID {
			out = append(out, a.view(m))
		}
	}
	w.tr.add("provider list %s -> %d machines", a.pool, len(out))
	return out, nil
}

func (a *providerAPI) view(m *machine) providers.Instance {
	return providers.Instance{ProviderID: m.pid, Name: m.name, Status: providers.StatusRunning}
}

// died: a call cut off by the process's death may have taken effect.
func (a *providerAPI) died(err error, effect func()) error {
	if err == errKilled && a.c.w.rng.IntN(2) == 0 {
		effect()
	}
	return err
}

var errUnsupported = errors.New("sim: not part of the simulated provider")

// RemoveAllInstances is not used by the engine.
func (a *providerAPI) RemoveAllInstances(context.Context) error { return errUnsupported }

// StartInstance is not used by the engine.
func (a *providerAPI) StartInstance(context.Context, string) error { return errUnsupported }

// StopInstance is not used by the engine.
func (a *providerAPI) StopInstance(context.Context, string) error { return errUnsupported }
