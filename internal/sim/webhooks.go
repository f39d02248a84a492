package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// emit records a workflow_job event for j and sends its delivery through
// the fault model: each delivery is dropped, duplicated, delayed and
// redelivered (same delivery id) independently, so deliveries also arrive
// out of order. GitHub never retries on its own: a delivery that finds the
// process down, or gets an error, is lost unless it is redelivered.
func (g *githubWorld) emit(j *ghJob, action runner.JobAction) {
	w := g.w
	ev := &jobEvent{seq: len(j.events) + 1, action: action}
	j.events = append(j.events, ev)
	payload := runner.JobEvent{
		Action:         action,
		JobID:          j.ID,
		RunID:          j.RunID,
		RunAttempt:     j.RunAttempt,
		Labels:         append([]string(nil), j.Labels...),
		Repository:     j.Repo,
		Org:            j.Org,
		InstallationID: 1,
		Conclusion:     j.Conclusion,
		CompletedAt:    j.CompletedAt,
	}
	if action == runner.ActionInProgress || (action == runner.ActionCompleted && j.runner != nil) {
		payload.RunnerName, payload.RunnerID = j.runner.Name, j.runner.ID
	}
	w.stats.inc("webhook.emitted")
	id := fmt.Sprintf("d%06d-%d-%s", w.stats.Get("webhook.emitted"), j.ID, action)

	faults := w.faultsOn
	if faults && chance(w.rng, w.cfg.Webhooks.Dropped) {
		w.stats.inc("fault.webhook.dropped")
		w.tr.add("webhook %s dropped", id)
		w.sched.after(deliveryTimeout, 0, func() { g.logAttempt(id, false, payload) })
	} else {
		g.deliverAfter(g.latency(faults), id, ev, payload)
	}
	if faults && chance(w.rng, w.cfg.Webhooks.Duplicated) {
		w.stats.inc("fault.webhook.duplicated")
		g.deliverAfter(g.latency(faults), id, ev, payload)
	}
	if faults && chance(w.rng, w.cfg.Webhooks.Redelivered) {
		w.stats.inc("fault.webhook.redelivered")
		g.deliverAfter(between(w.rng, time.Minute, time.Hour), id, ev, payload)
	}
}

// latency is how long a delivery takes: within 2 s, or, when delayed,
// 10 s to 10 min.
func (g *githubWorld) latency(faults bool) time.Duration {
	w := g.w
	if faults && chance(w.rng, w.cfg.Webhooks.Delayed) {
		w.stats.inc("fault.webhook.delayed")
		return between(w.rng, 10*time.Second, 10*time.Minute)
	}
	return between(w.rng, 50*time.Millisecond, 2*time.Second)
}

// deliverAfter delivers one attempt after d and logs it in GitHub's
// delivery log: failed once GitHub's timeout passed without an answer
// (the delivery still arrives, late), or as answered.
func (g *githubWorld) deliverAfter(d time.Duration, id string, ev *jobEvent, payload runner.JobEvent) {
	w := g.w
	timedOut := d >= deliveryTimeout
	if timedOut {
		w.sched.after(deliveryTimeout, 0, func() { g.logAttempt(id, false, payload) })
	}
	logAnswer := func(ok bool) {
		if !timedOut {
			g.logAttempt(id, ok, payload)
		}
	}
	g.deliveriesInFlight++
	w.sched.after(d, 0, func() {
		g.deliveriesInFlight--
		p := w.proc
		if p == nil || !p.up || p.dead {
			w.stats.inc("webhook.refused_process_down")
			w.tr.add("webhook %s: 503, runfleet is down", id)
			logAnswer(false)
			return
		}
		w.stats.inc("webhook.delivered")
		p.spawn("webhook "+id, func(ctx context.Context) {
			result, err := p.ctl.HandleJobEvent(ctx, payload, engine.Webhook(id))
			if err == nil && p.dead {
				err = errKilled // the answer never left the process
			}
			if err != nil {
				w.stats.inc("webhook.failed")
				w.tr.add("webhook %s (%s job %d): error %v", id, payload.Action, payload.JobID, err)
				logAnswer(false)
				return
			}
			logAnswer(true)
			ev.accepted = true
			// A scale-set job's webhooks name it by its REST id, another
			// ledger record than the one its listener keeps (F21): only
			// its scale set's message tells that record it finished.
			if j := g.jobByID[payload.JobID]; payload.Action == runner.ActionCompleted && j != nil && j.ss == nil {
				g.heardFinished(j)
			}
			w.tr.add("webhook %s (%s job %d): %s", id, payload.Action, payload.JobID, result)
		})
	})
}

// known says whether runfleet was told, and acknowledged, that the job is
// queued: of its queued and waiting events that runfleet accepted, the
// latest one GitHub emitted is a queued. Only such a job must be served —
// one whose every queued delivery was lost is invisible to runfleet.
func (g *githubWorld) known(j *ghJob) bool {
	for i := len(j.events) - 1; i >= 0; i-- {
		ev := j.events[i]
		if !ev.accepted || (ev.action != runner.ActionQueued && ev.action != runner.ActionWaiting) {
			continue
		}
		return ev.action == runner.ActionQueued
	}
	return false
}

// toldCompleted says whether runfleet acknowledged any completed delivery
// of the job.
func (g *githubWorld) toldCompleted(j *ghJob) bool {
	return g.everAccepted(j, runner.ActionCompleted)
}

// everAccepted says whether runfleet acknowledged any delivery of the
// job's events of that action.
func (g *githubWorld) everAccepted(j *ghJob, action runner.JobAction) bool {
	for _, ev := range j.events {
		if ev.accepted && ev.action == action {
			return true
		}
	}
	return false
}
