package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// tickEvery is how often the world looks at the cloud and moves jobs.
const tickEvery = 100 * time.Millisecond

// world is GitHub and the machines, played by the driver: jobs are queued
// on schedule; machines that appear in the cloud boot through runfleet and
// their runners take queued jobs, as GitHub hands any matching idle runner
// any queued job; jobs finish after their run time. Each step sends the
// webhook GitHub would.
type world struct {
	log   *slog.Logger
	gh    *gitHub
	cloud externaltest.Config
	send  *senders
	boot  *booter
	rng   *rand.Rand // the tick goroutine's only
	start time.Time

	mu       sync.Mutex
	jobs     []*job // in arrival order
	next     int    // first job not queued yet
	machines map[string]*machine
	booting  int
	bootSem  chan struct{}
	// mirrored names the scale set's runners shown in the REST runner
	// list (-intake scaleset).
	mirrored map[string]bool
	stats    worldStats
	err      error
}

type worldStats struct {
	bootsReady, bootsRefused, bootsFailed, bootRetries int
	startRaces                                         int // StartJob refused: the runner went away first
	reassignments                                      int // assignments GitHub took back and made again (scale set)
	cancellations                                      int // jobs canceled for good while assigned, not taken (scale set)
	lateCopies                                         int // earlier messages the broker delivered again, late (scale set)
	lastLateCopy                                       time.Time
}

func newWorld(log *slog.Logger, gh *gitHub, c externaltest.Config, send *senders, p plan, s settings) *world {
	return &world{
		log:      log,
		gh:       gh,
		cloud:    c,
		send:     send,
		boot:     &booter{client: &http.Client{Timeout: 5 * time.Second}, seed: s.seed, failRate: s.bootFailRate},
		rng:      rand.New(rand.NewPCG(s.seed, 0x3c7)),
		jobs:     p.jobs,
		machines: map[string]*machine{},
		mirrored: map[string]bool{},
		bootSem:  make(chan struct{}, 8),
	}
}

// run ticks until ctx ends; the first error stops it and is kept.
func (w *world) run(ctx context.Context, start time.Time) {
	w.start = start
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := w.tick(ctx, now); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				w.log.Error("world stopped", "error", err)
				return
			}
		}
	}
}

// tick plays one step of GitHub and the machines: arrivals (webhooks or
// the scale set's queue), the cloud read, boots, then the intake's own
// assignment and finish.
func (w *world) tick(ctx context.Context, now time.Time) error {
	scaleSet := w.gh.actions != nil
	if scaleSet {
		w.queueIntoScaleSet(now)
	} else if err := w.queueArrivals(now); err != nil {
		return err
	}
	state, err := w.cloud.Read()
	if err != nil {
		return fmt.Errorf("read the cloud: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncMachines(state, now)
	w.startBoots(ctx, now)
	if scaleSet {
		return w.playScaleSet(now)
	}
	if err := w.assign(now); err != nil {
		return err
	}
	return w.finish(now)
}

// playScaleSet is the scale set's part of a tick (scaleworld.go): its
// runners mirrored into the REST fake, GitHub's re-assignments, jobs
// handed to runners, jobs finished.
func (w *world) playScaleSet(now time.Time) error {
	w.mirrorRunners()
	w.reassign(now)
	w.cancelAssigned(now)
	w.deliverLate(now)
	if err := w.assignScaleSet(now); err != nil {
		return err
	}
	return w.finishScaleSet(now)
}

// queueArrivals queues every job whose time has come: in GitHub, then the
// queued webhook.
func (w *world) queueArrivals(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ; w.next < len(w.jobs) && w.jobs[w.next].arriveAt <= now.Sub(w.start); w.next++ {
		j := w.jobs[w.next]
		w.gh.AddJob(githubtest.Job{ID: j.id, Repo: chaosRepo, Labels: jobLabels})
		body, err := w.gh.WorkflowJobWebhook(j.id, githubtest.JobQueued, "", chaosInstallation)
		if err != nil {
			return err
		}
		j.state = jobQueued
		w.send.enqueue(&delivery{id: j.delivery[deliverQueued], job: j.id, action: githubtest.JobQueued, body: body})
	}
	return nil
}

// syncMachines learns new machines and notices deleted ones.
func (w *world) syncMachines(state externaltest.State, now time.Time) {
	present := map[string]bool{}
	for _, cm := range state.Machines {
		present[cm.Instance.ProviderID] = true
		if _, known := w.machines[cm.Instance.ProviderID]; known {
			continue
		}
		boot := minBoot + time.Duration(w.rng.Int64N(int64(maxBoot-minBoot)))
		w.machines[cm.Instance.ProviderID] = &machine{Machine: cm, seenAt: now, bootAt: now.Add(boot)}
	}
	for id, m := range w.machines {
		if !present[id] && m.state != machineGone {
			m.state = machineGone
		}
	}
}

func (w *world) startBoots(ctx context.Context, now time.Time) {
	for _, m := range w.machines {
		if m.state != machineBooting || m.booting || now.Before(m.bootAt) {
			continue
		}
		select {
		case w.bootSem <- struct{}{}:
		default:
			return // enough boots in flight; the rest next tick
		}
		m.booting = true
		w.booting++
		go func(m *machine, cm externaltest.Machine) {
			defer func() { <-w.bootSem }()
			outcome, why := w.boot.boot(ctx, cm)
			w.booted(m, outcome, why)
		}(m, m.Machine)
	}
}

func (w *world) booted(m *machine, outcome bootOutcome, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m.booting = false
	w.booting--
	m.bootTries++
	if m.state != machineBooting {
		return // deleted meanwhile
	}
	switch outcome {
	case bootReady:
		m.state = machineReady
		w.stats.bootsReady++
	case bootRefused, bootFailed:
		m.state, m.why = machineDead, why
		if outcome == bootRefused {
			w.stats.bootsRefused++
		} else {
			w.stats.bootsFailed++
		}
		w.log.Info("machine will never run a job", "instance", m.Instance.Name, "provider_id", m.Instance.ProviderID, "why", why)
	case bootRetry:
		w.stats.bootRetries++
		if time.Since(m.seenAt) > bootGiveUp {
			m.state, m.why = machineDead, "gave up reaching runfleet: "+why
			return
		}
		m.bootAt = time.Now().Add(500 * time.Millisecond)
	}
}

// progress is a snapshot for the progress line and the settle check.
type progress struct {
	queued, running, done, pending int
	machinesLive, booting          int
}

func (w *world) progress() progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	var p progress
	for _, j := range w.jobs {
		switch j.state {
		case jobPending:
			p.pending++
		case jobQueued:
			p.queued++
		case jobRunning:
			p.running++
		case jobDone:
			p.done++
		}
	}
	for _, m := range w.machines {
		if m.state != machineGone {
			p.machinesLive++
		}
	}
	p.booting = w.booting
	return p
}

func (w *world) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
