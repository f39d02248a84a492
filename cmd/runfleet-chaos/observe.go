package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// observation is everything read at the end, for the checks.
type observation struct {
	jobs     []job
	machines []machine
	world    worldStats
	send     sendStats
	cloud    externaltest.State
	history  externaltest.History
	// live is runfleet's live (not deleted) records.
	live []*runner.Instance
	// records are runfleet's records of the machines left in the cloud
	// (nil: none), by provider id.
	records     map[string]*runner.Instance
	runners     []githubtest.Runner // ours, still registered in GitHub
	deadLetters int
	githubCalls map[string]int // by route
	apiCalls    int
	// deliveries is the App's delivery log and runfleet's recoveries.
	deliveries deliveryLog
	// scaleSet is what the Actions service holds at the end (-intake
	// scaleset); nil with webhooks.
	scaleSet *scaleSetObservation
}

// maxRecordLookups bounds the per-machine record reads of a badly leaking
// run.
const maxRecordLookups = 50

func observe(ctx context.Context, w *world, send *senders, gh *gitHub, cl externaltest.Config, op *operator, serveLogs []string) (*observation, error) {
	o := &observation{send: send.snapshot(), records: map[string]*runner.Instance{}, githubCalls: map[string]int{}}
	w.mu.Lock()
	for _, j := range w.jobs {
		o.jobs = append(o.jobs, *j)
	}
	for _, m := range w.machines {
		o.machines = append(o.machines, *m)
	}
	o.world = w.stats
	w.mu.Unlock()
	sort.Slice(o.machines, func(i, j int) bool { return o.machines[i].seenAt.Before(o.machines[j].seenAt) })

	var err error
	if o.cloud, err = cl.Read(); err != nil {
		return nil, fmt.Errorf("read the cloud: %w", err)
	}
	events, err := externaltest.ReadEvents(cl.EventLog)
	if err != nil {
		return nil, fmt.Errorf("read the provider's event log: %w", err)
	}
	o.history = externaltest.Replay(events)
	if o.live, err = op.liveInstances(ctx); err != nil {
		return nil, fmt.Errorf("list runfleet's live instances: %w", err)
	}
	for i, m := range o.cloud.Machines {
		if i == maxRecordLookups {
			break
		}
		rec, err := op.instance(ctx, m.Instance.Name)
		if err != nil {
			return nil, fmt.Errorf("read runfleet's record of %s: %w", m.Instance.Name, err)
		}
		o.records[m.Instance.ProviderID] = rec
	}
	if o.deadLetters, err = op.deadLetters(ctx); err != nil {
		return nil, fmt.Errorf("read /healthz: %w", err)
	}
	for _, r := range gh.Runners() {
		if runner.OursByName(r.Name) {
			o.runners = append(o.runners, r)
		}
	}
	for _, c := range gh.Calls() {
		o.githubCalls[c.Route]++
	}
	o.apiCalls = gh.APICallCount()
	if gh.actions != nil {
		o.scaleSet = observeScaleSet(gh.actions)
	}
	if o.deliveries, err = readDeliveryLog(gh.Deliveries(), serveLogs, o.githubCalls); err != nil {
		return nil, fmt.Errorf("read runfleet's logs: %w", err)
	}
	return o, nil
}
