package main

import (
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// The world with a scale set (-intake scaleset): jobs are queued into the
// scale set, which assigns them to it at once (github.com's flow), and
// the scale set's own runners take them — a runner registered with a JIT
// config from the scale set, on a machine that booted. No webhook is
// sent: runfleet learns everything from its listener's messages.

// reassignAfter is how long an assigned job waits for a runner before
// GitHub may take the assignment back (JobCompleted canceled, then
// JobAssigned again), for the jobs the plan gives re-assignments.
const reassignAfter = time.Second

// queueIntoScaleSet queues every job whose time has come into the scale
// set; none before runfleet's listener has made it.
func (w *world) queueIntoScaleSet(now time.Time) {
	setID, ok := w.gh.actions.scaleSet()
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for ; w.next < len(w.jobs) && w.jobs[w.next].arriveAt <= now.Sub(w.start); w.next++ {
		j := w.jobs[w.next]
		j.requestID = w.gh.actions.QueueJob(setID, scalesettest.JobSpec{
			Repository: chaosRepo, Labels: []string{chaosScaleSet}, WorkflowRunID: j.id, DisplayName: fmt.Sprint(j.id),
		})
		j.state, j.assignedAt = jobQueued, now
	}
}

// reassign plays GitHub taking back the assignment of a job no runner
// took for a while, and assigning it again, as often as the plan says.
func (w *world) reassign(now time.Time) {
	for _, j := range w.queuedJobs() {
		if j.reassignLeft == 0 || now.Sub(j.assignedAt) < reassignAfter {
			continue
		}
		if w.gh.actions.CancelAssignment(j.requestID) {
			w.stats.reassignments++
			w.log.Info("assignment taken back and made again", "job_id", j.id, "runner_request_id", j.requestID)
		}
		j.reassignLeft--
		j.assignedAt = now
	}
}

// assignScaleSet hands queued jobs to the scale set's idle runners on
// ready machines: any of its jobs to any of its runners.
func (w *world) assignScaleSet(now time.Time) error {
	idle := map[string]bool{}
	for _, r := range w.gh.actions.Runners() {
		if !r.Busy {
			idle[r.Name] = true
		}
	}
	var ready []*machine
	for _, m := range w.machines {
		if m.state == machineReady && idle[m.Instance.Name] {
			ready = append(ready, m)
		}
	}
	queued := w.queuedJobs()
	if len(ready) == 0 || len(queued) == 0 {
		return nil
	}
	w.rng.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
	return w.cloud.Hold(func(state externaltest.State) {
		present := presentMachines(state)
		for _, m := range ready {
			if len(queued) == 0 {
				return
			}
			if !present[m.Instance.ProviderID] {
				continue // deleted since this tick read the cloud
			}
			i := w.rng.IntN(len(queued))
			j := queued[i]
			if err := w.gh.actions.StartJob(j.requestID, m.Instance.Name); err != nil {
				w.stats.startRaces++
				continue
			}
			queued = append(queued[:i], queued[i+1:]...)
			j.state, j.served, j.runner, j.providerID = jobRunning, j.served+1, m.Instance.Name, m.Instance.ProviderID
			j.startedAt, j.finishAt = now, now.Add(j.runFor)
			m.state, m.job = machineRunning, j.id
		}
	})
}

// finishScaleSet ends the jobs whose run time is up: the scale set
// completes them and the ephemeral runner deregisters itself. A job whose
// machine is gone by then was interrupted: runfleet destroyed a busy
// runner.
func (w *world) finishScaleSet(now time.Time) error {
	due := w.dueJobs(now)
	if len(due) == 0 {
		return nil
	}
	return w.cloud.Hold(func(state externaltest.State) {
		present := presentMachines(state)
		for _, j := range due {
			result := scaleset.ResultSucceeded
			if !present[j.providerID] {
				j.interrupted = true
				result = scaleset.ResultFailed
				w.log.Warn("machine deleted while running a job", "job_id", j.id, "instance", j.runner, "provider_id", j.providerID)
			}
			if err := w.gh.actions.CompleteJob(j.requestID, result); err != nil {
				w.log.Error("complete the job in the scale set", "job_id", j.id, "error", err)
			}
			w.gh.actions.RunnerLeaves(j.runner)
			j.state = jobDone
			if m := w.machines[j.providerID]; m != nil && m.state == machineRunning {
				m.state = machineFinished
			}
		}
	})
}

// mirrorRunners keeps GitHub's REST runner list in step with the scale
// set, as GitHub shows a scale set's runners there too: online once its
// machine booted, busy while it runs a job, gone when it left the scale
// set. runfleet's reconciler reads that list (online, busy, leaked). A
// mirrored runner runfleet deleted through the REST API (an orphan) is
// gone from the scale set too.
func (w *world) mirrorRunners() {
	a, rest := w.gh.actions, w.gh.Server
	setID, ok := a.scaleSet()
	if !ok {
		return
	}
	booted := map[string]bool{}
	for _, m := range w.machines {
		if m.state == machineReady || m.state == machineRunning {
			booted[m.Instance.Name] = true
		}
	}
	inScaleSet := map[string]scalesettest.RunnerInfo{}
	for _, r := range a.Runners() {
		inScaleSet[r.Name] = r
	}
	for name := range w.mirrored {
		r, registered := inScaleSet[name]
		_, listed := rest.RunnerByName(name)
		switch {
		case !registered:
			rest.FinishRunner(name) // ephemeral: it goes
			delete(w.mirrored, name)
			w.log.Debug("runner left the scale set; gone from the REST list", "instance", name)
		case !listed:
			a.RunnerLeaves(name)
			delete(w.mirrored, name)
			w.log.Debug("mirrored runner deleted through REST; it leaves the scale set", "instance", name)
		default:
			rest.SetBusy(name, r.Busy)
		}
	}
	var labels []string
	for name, r := range inScaleSet {
		if w.mirrored[name] || !booted[name] || r.SetID != setID {
			continue
		}
		if labels == nil {
			labels = a.ScaleSetLabels(setID)
		}
		rest.AddRunner(githubtest.Runner{
			ID: r.ID, Owner: chaosOrg, Name: name, Status: githubtest.StatusOnline, Busy: r.Busy, Labels: labels, Ephemeral: true,
		})
		w.mirrored[name] = true
		w.log.Debug("runner mirrored into the REST list", "instance", name, "runner_id", r.ID, "busy", r.Busy)
	}
}

// presentMachines is the set of provider ids in the cloud.
func presentMachines(state externaltest.State) map[string]bool {
	present := map[string]bool{}
	for _, cm := range state.Machines {
		present[cm.Instance.ProviderID] = true
	}
	return present
}

// cancelAssigned plays GitHub canceling for good (a user's cancel) the
// jobs the plan says, once assigned that long with no runner taking them:
// JobCompleted, canceled, no runner, and nothing after it. runfleet must
// make no machine for such a job from then on (checkFinishedJobs).
func (w *world) cancelAssigned(now time.Time) {
	for _, j := range w.queuedJobs() {
		if j.cancelAfter == 0 || now.Sub(j.assignedAt) < j.cancelAfter {
			continue
		}
		j.cancelAfter = 0
		if !w.gh.actions.CancelJob(j.requestID) {
			continue
		}
		j.state, j.canceledAt = jobDone, now
		w.stats.cancellations++
		w.log.Info("job canceled for good while assigned, before any runner took it", "job_id", j.id, "runner_request_id", j.requestID)
	}
}

// lateCopyEvery is how often the broker delivers an earlier message again.
const lateCopyEvery = 1500 * time.Millisecond

// deliverLate plays the broker delivering an earlier message again, late
// — after later messages, after its acknowledgement, after its job
// finished: the first JobAssigned of a job already completed or canceled,
// which must change nothing (issue #36).
func (w *world) deliverLate(now time.Time) {
	setID, ok := w.gh.actions.scaleSet()
	if !ok || now.Sub(w.stats.lastLateCopy) < lateCopyEvery {
		return
	}
	w.stats.lastLateCopy = now
	var finished []*job
	for _, j := range w.jobs[:w.next] {
		if j.state == jobDone {
			finished = append(finished, j)
		}
	}
	if len(finished) == 0 {
		return
	}
	j := finished[w.rng.IntN(len(finished))]
	ids := w.gh.actions.MessagesAbout(setID, j.requestID, "JobAssigned")
	if len(ids) == 0 || !w.gh.actions.DeliverLate(setID, ids[0]) {
		return
	}
	w.stats.lateCopies++
	w.log.Info("message delivered again, late", "message_id", ids[0], "job_id", j.id, "runner_request_id", j.requestID, "canceled", !j.canceledAt.IsZero())
}
