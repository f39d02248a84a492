package main

import (
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// assign hands queued jobs to ready machines, as GitHub does: any queued
// job to any idle runner whose labels match, not the job the runner was
// made for. The cloud is locked meanwhile, so the machine certainly exists
// when its runner takes the job.
func (w *world) assign(now time.Time) error {
	var ready []*machine
	for _, m := range w.machines {
		if m.state == machineReady {
			ready = append(ready, m)
		}
	}
	queued := w.queuedJobs()
	if len(ready) == 0 || len(queued) == 0 {
		return nil
	}
	w.rng.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
	var bodies []*delivery
	err := w.cloud.Hold(func(state externaltest.State) {
		present := map[string]bool{}
		for _, cm := range state.Machines {
			present[cm.Instance.ProviderID] = true
		}
		for _, m := range ready {
			if len(queued) == 0 {
				return
			}
			if !present[m.Instance.ProviderID] {
				continue // deleted since this tick read the cloud
			}
			r, ok := w.gh.RunnerByName(m.Instance.Name)
			if !ok || r.Busy || r.JobID != 0 {
				continue // not registered (yet, or any more), or busy
			}
			i := w.rng.IntN(len(queued))
			j := queued[i]
			if !w.gh.StartJob(j.id, m.Instance.Name) {
				w.stats.startRaces++
				continue
			}
			queued = append(queued[:i], queued[i+1:]...)
			j.state, j.served, j.runner, j.providerID = jobRunning, j.served+1, m.Instance.Name, m.Instance.ProviderID
			j.startedAt, j.finishAt = now, now.Add(j.runFor)
			m.state, m.job = machineRunning, j.id
			if j.loseInProgress {
				w.log.Info("in_progress lost by GitHub", "job_id", j.id, "instance", m.Instance.Name)
				continue
			}
			body, err := w.gh.WorkflowJobWebhook(j.id, githubtest.JobInProgress, "", chaosInstallation)
			if err != nil {
				w.log.Error("in_progress body", "job_id", j.id, "error", err)
				continue
			}
			bodies = append(bodies, &delivery{id: j.delivery[deliverInProgress], job: j.id, action: githubtest.JobInProgress, body: body})
		}
	})
	for _, d := range bodies {
		w.send.enqueue(d)
	}
	return err
}

func (w *world) queuedJobs() []*job {
	var out []*job
	for _, j := range w.jobs[:w.next] {
		if j.state == jobQueued {
			out = append(out, j)
		}
	}
	return out
}

// dueJobs are the running jobs whose run time is up at now.
func (w *world) dueJobs(now time.Time) []*job {
	var due []*job
	for _, j := range w.jobs[:w.next] {
		if j.state == jobRunning && !now.Before(j.finishAt) {
			due = append(due, j)
		}
	}
	return due
}

// finish ends the jobs whose run time is up: GitHub completes them (the
// JIT runner removes itself) and sends completed. A job whose machine is
// gone by then was interrupted: runfleet destroyed a busy runner.
func (w *world) finish(now time.Time) error {
	due := w.dueJobs(now)
	if len(due) == 0 {
		return nil
	}
	var bodies []*delivery
	err := w.cloud.Hold(func(state externaltest.State) {
		present := map[string]bool{}
		for _, cm := range state.Machines {
			present[cm.Instance.ProviderID] = true
		}
		for _, j := range due {
			conclusion := "success"
			if !present[j.providerID] {
				j.interrupted = true
				conclusion = "failure"
				w.log.Warn("machine deleted while running a job", "job_id", j.id, "instance", j.runner, "provider_id", j.providerID)
			}
			w.gh.FinishJob(j.id, conclusion)
			j.state = jobDone
			if m := w.machines[j.providerID]; m != nil && m.state == machineRunning {
				m.state = machineFinished
			}
			if j.loseCompleted {
				w.log.Info("completed lost by GitHub", "job_id", j.id, "instance", j.runner)
				continue
			}
			body, err := w.gh.WorkflowJobWebhook(j.id, githubtest.JobCompleted, "", chaosInstallation)
			if err != nil {
				w.log.Error("completed body", "job_id", j.id, "error", err)
				continue
			}
			bodies = append(bodies, &delivery{id: j.delivery[deliverCompleted], job: j.id, action: githubtest.JobCompleted, body: body})
		}
	})
	for _, d := range bodies {
		w.send.enqueue(d)
	}
	return err
}
