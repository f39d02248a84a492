// Package conformance runs a provider through the calls runfleet relies on
// — create, list by pool id, delete by provider id (twice) and by name, a
// call past its timeout — and reports what conforms and what does not. A
// shortfall that costs runfleet something but breaks nothing (a delete by
// name that does nothing, a GetInstance runfleet never makes) is a warning
// that says what it costs, not a failure. It works on any
// providers.Provider; its purpose is vetting a GARM external provider
// binary before a pool depends on it (`runfleet provider check`). It
// creates real machines and deletes them again.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "pass"
	// Warn is a check that did not pass in a way runfleet survives, at
	// the cost its detail states.
	Warn Status = "warn"
	Fail Status = "fail"
	// Skip is a check that could not run because an earlier one failed.
	Skip Status = "skip"
)

// Result is one check.
type Result struct {
	Check  string        `json:"check"`
	Status Status        `json:"status"`
	Detail string        `json:"detail,omitempty"`
	Took   time.Duration `json:"took_ns"`
}

// Report is a whole run.
type Report struct {
	Pool    string   `json:"pool"`
	Results []Result `json:"results"`
	// Leftovers are machines the run made and could not delete: remove
	// them by hand.
	Leftovers []string `json:"leftovers,omitempty"`
	// Notes are what the caller adds about the run that is no check's
	// outcome, such as why the create request lacked something.
	Notes []string `json:"notes,omitempty"`
}

// Count returns how many checks ended with s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// OK reports whether every check passed (or only warned) and nothing was
// left behind.
func (r Report) OK() bool {
	return r.Count(Fail) == 0 && r.Count(Skip) == 0 && len(r.Leftovers) == 0
}

// Options tune a run. Zero values get the defaults noted.
type Options struct {
	// Pool is the pool's name, for the report and CreateRequest.Pool.
	Pool string
	// PoolID is the provider-side pool id (CreateRequest.PoolID and the
	// ListInstances argument) the provider was built for (required).
	PoolID string
	// Template supplies every CreateRequest field but Name, Pool and
	// PoolID (labels, URLs, token, machine shape).
	Template providers.CreateRequest
	// NamePrefix starts the names of the machines made (default
	// "runfleet-check-"); a random suffix makes them unique.
	NamePrefix string
	// CreateTimeout bounds each CreateInstance (default 20m, GARM's
	// bootstrap timeout); CallTimeout every other call (default 2m).
	CreateTimeout time.Duration
	CallTimeout   time.Duration
	// Settle is how long a deleted machine may still be listed, for
	// clouds that list terminating machines for a while (default 30s);
	// PollInterval is how often the list is read meanwhile (default 1s).
	Settle       time.Duration
	PollInterval time.Duration
	// ProbeTimeout is the tiny timeout of the ListInstances that must be
	// killed (default 10ms); the call must return within ProbeGrace after
	// it (default 10s).
	ProbeTimeout time.Duration
	ProbeGrace   time.Duration
}

func (o *Options) applyDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "runfleet-check-"
	}
	def(&o.CreateTimeout, 20*time.Minute)
	def(&o.CallTimeout, 2*time.Minute)
	def(&o.Settle, 30*time.Second)
	def(&o.PollInterval, time.Second)
	def(&o.ProbeTimeout, 10*time.Millisecond)
	def(&o.ProbeGrace, 10*time.Second)
}

// versioned is a provider that reports its version (external providers).
type versioned interface {
	GetVersion(ctx context.Context) (string, error)
}

// machine is one machine the run made.
type machine struct {
	name, providerID string
	gone             bool
}

type checker struct {
	p      providers.Provider
	opts   Options
	report Report
	made   []*machine
}

// Run checks p and reports every outcome; it never stops at the first
// failure, and it deletes what it made before returning.
func Run(ctx context.Context, p providers.Provider, opts Options) Report {
	opts.applyDefaults()
	c := &checker{p: p, opts: opts, report: Report{Pool: opts.Pool}}
	suffix := randomSuffix()

	if v, ok := p.(versioned); ok {
		c.step("GetVersion answers", func() (Status, string) {
			ctx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
			defer cancel()
			version, err := v.GetVersion(ctx)
			if err != nil {
				return Fail, providers.Fault(err)
			}
			return Pass, fmt.Sprintf("version %q", version)
		})
	}

	a := c.create(ctx, "CreateInstance makes a running machine", opts.NamePrefix+suffix+"-a")
	c.lifecycle(ctx, a)
	b := c.create(ctx, "CreateInstance makes a second machine (to delete by name)", opts.NamePrefix+suffix+"-b")
	c.deleteByName(ctx, b)
	c.cleanUp(ctx)
	return c.report
}

// lifecycle checks get, list, the timeout kill and deletes on machine m.
func (c *checker) lifecycle(ctx context.Context, m *machine) {
	checks := []string{
		"GetInstance by provider id finds it",
		"ListInstances lists it",
		"a call past its timeout is killed",
		"DeleteInstance by provider id succeeds",
		"the deleted machine leaves ListInstances",
		"DeleteInstance of a deleted machine succeeds (not found = success)",
	}
	if m == nil {
		c.skip(checks, "needs the machine CreateInstance should have made")
		return
	}
	c.step(checks[0], func() (Status, string) { return c.get(ctx, m) })
	c.step(checks[1], func() (Status, string) {
		listed, err := c.listed(ctx, m.providerID)
		switch {
		case err != nil:
			return Fail, providers.Fault(err)
		case !listed:
			return Fail, fmt.Sprintf("%s (provider id %s) is not in the list of pool %q (pool id %s): the reconciler would never see it", m.name, m.providerID, c.opts.Pool, c.opts.PoolID)
		}
		return Pass, ""
	})
	c.step(checks[2], func() (Status, string) { return c.probeTimeout(ctx) })
	deleted := c.step(checks[3], func() (Status, string) { return c.delete(ctx, m.providerID) })
	if deleted {
		c.step(checks[4], func() (Status, string) {
			left, err := c.leavesList(ctx, m)
			switch {
			case err != nil:
				return Fail, providers.Fault(err)
			case !left:
				return Fail, fmt.Sprintf("%s (provider id %s) is still listed %s after the delete", m.name, m.providerID, c.opts.Settle)
			}
			return Pass, ""
		})
	} else {
		c.skip(checks[4:5], "the delete failed")
	}
	c.step(checks[5], func() (Status, string) { return c.delete(ctx, m.providerID) })
}

// deleteByName checks the delete runfleet sends after a failed create,
// when the machine's provider id may be unknown: by name. An error fails
// (runfleet would retry that delete without end); a success that leaves
// the machine running is a warning with its cost.
func (c *checker) deleteByName(ctx context.Context, m *machine) {
	checks := []string{"DeleteInstance by name succeeds", "DeleteInstance by name removes the machine"}
	if m == nil {
		c.skip(checks, "needs the second machine")
		return
	}
	if !c.step(checks[0], func() (Status, string) { return c.delete(ctx, m.name) }) {
		c.skip(checks[1:], "the delete failed")
		return
	}
	c.step(checks[1], func() (Status, string) {
		left, err := c.leavesList(ctx, m)
		switch {
		case err != nil:
			return Fail, providers.Fault(err)
		case !left:
			return Warn, fmt.Sprintf("the provider ignores deletes by name: %s (provider id %s) is still listed %s after one succeeded. "+
				"Cost: after a failed create runfleet must list the pool and delete the machine by provider id; "+
				"until then it runs (and bills), at worst until the reconciler's next pass", m.name, m.providerID, c.opts.Settle)
		}
		return Pass, ""
	})
}

func (c *checker) create(ctx context.Context, check, name string) *machine {
	var made *machine
	c.step(check, func() (Status, string) {
		req := c.opts.Template
		req.Name, req.Pool, req.PoolID = name, c.opts.Pool, c.opts.PoolID
		ctx, cancel := context.WithTimeout(ctx, c.opts.CreateTimeout)
		defer cancel()
		in, err := c.p.CreateInstance(ctx, req)
		// Whatever happened, a machine may exist: delete it at the end.
		m := &machine{name: name, providerID: in.ProviderID}
		c.made = append(c.made, m)
		switch {
		case err != nil:
			return Fail, providers.Fault(err)
		case in.Status == providers.StatusError:
			return Fail, fmt.Sprintf("status error: %s", in.Fault)
		case in.ProviderID == "":
			return Fail, "no provider id in the answer"
		case in.Name != name:
			return Fail, fmt.Sprintf("answered name %q for a machine named %q", in.Name, name)
		}
		made = m
		return Pass, fmt.Sprintf("%s: provider id %s, status %s", name, in.ProviderID, in.Status)
	})
	return made
}

// get checks GetInstance by provider id. runfleet never calls GetInstance
// (it lists the pool instead), so a provider that gets it wrong only warns:
// GARM itself does call it.
func (c *checker) get(ctx context.Context, m *machine) (Status, string) {
	const cost = "runfleet never calls GetInstance, so this costs nothing here (GARM does call it): "
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	in, err := c.p.GetInstance(ctx, m.providerID)
	switch {
	case err != nil:
		return Warn, cost + providers.Fault(err)
	case in.ProviderID != m.providerID || in.Name != m.name:
		return Warn, fmt.Sprintf("%sanswered %s (provider id %s), want %s (provider id %s)", cost, in.Name, in.ProviderID, m.name, m.providerID)
	}
	return Pass, "status " + string(in.Status)
}

func (c *checker) delete(ctx context.Context, id string) (Status, string) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	if err := c.p.DeleteInstance(ctx, id); err != nil {
		return Fail, providers.Fault(err)
	}
	return Pass, ""
}

// probeTimeout makes a ListInstances, the call every reconciler pass
// makes, with a tiny timeout: it must come back promptly with the deadline
// as its error, the provider killed.
func (c *checker) probeTimeout(ctx context.Context) (Status, string) {
	pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	start := time.Now()
	_, err := c.p.ListInstances(pctx, c.opts.PoolID)
	took := time.Since(start)
	switch {
	case took > c.opts.ProbeTimeout+c.opts.ProbeGrace:
		return Fail, fmt.Sprintf("a call with a %s timeout returned after %s: a hung provider would hold a worker", c.opts.ProbeTimeout, took.Round(time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded):
		return Pass, fmt.Sprintf("%s timeout: killed, returned after %s", c.opts.ProbeTimeout, took.Round(time.Millisecond))
	case err == nil:
		return Pass, fmt.Sprintf("answered within the %s timeout, so the kill was not exercised", c.opts.ProbeTimeout)
	}
	return Fail, fmt.Sprintf("a call past its %s timeout failed without reporting the deadline: %s", c.opts.ProbeTimeout, providers.Fault(err))
}

// leavesList waits up to Settle for m to leave the pool's list and
// reports whether it did.
func (c *checker) leavesList(ctx context.Context, m *machine) (bool, error) {
	deadline := time.Now().Add(c.opts.Settle)
	for {
		listed, err := c.listed(ctx, m.providerID)
		if err != nil {
			return false, err
		}
		if !listed {
			m.gone = true
			return true, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.opts.PollInterval):
		}
	}
}

func (c *checker) listed(ctx context.Context, providerID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	list, err := c.p.ListInstances(ctx, c.opts.PoolID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(in providers.Instance) bool { return in.ProviderID == providerID }), nil
}

// cleanUp deletes every machine not known to be gone, by provider id when
// known, else by name — even when ctx was cancelled (an interrupted check
// must not leave machines running).
func (c *checker) cleanUp(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, m := range c.made {
		if m.gone {
			continue
		}
		id := m.providerID
		if id == "" {
			id = m.name
		}
		dctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
		err := c.p.DeleteInstance(dctx, id)
		cancel()
		if err != nil {
			c.report.Leftovers = append(c.report.Leftovers, fmt.Sprintf("%s (provider id %q): delete failed: %s", m.name, m.providerID, providers.Fault(err)))
		}
	}
}

// step runs one check and records it; it reports whether it passed.
func (c *checker) step(check string, run func() (Status, string)) bool {
	start := time.Now()
	status, detail := run()
	c.report.Results = append(c.report.Results, Result{Check: check, Status: status, Detail: detail, Took: time.Since(start)})
	return status == Pass
}

func (c *checker) skip(checks []string, why string) {
	for _, check := range checks {
		c.report.Results = append(c.report.Results, Result{Check: check, Status: Skip, Detail: why})
	}
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
