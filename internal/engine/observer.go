package engine

import (
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// QueueStage is a point in a job's wait for a runner, each measured from
// the moment GitHub queued the job (runner.Job.QueuedAt).
type QueueStage string

// The stages of a job's queue time, in the order a job reaches them.
const (
	// StageCreated: the provider's create returned a machine for the job.
	StageCreated QueueStage = "created"
	// StageOnline: the machine's runner reported itself idle (online).
	StageOnline QueueStage = "online"
	// StageStarted: GitHub reported the job in_progress on a runner of ours.
	StageStarted QueueStage = "started"
)

// QueueStages lists every stage, so an exporter can show each at 0.
var QueueStages = []QueueStage{StageCreated, StageOnline, StageStarted}

// Observer hears what the engine did, for metrics and the status page.
// The engine calls it synchronously after the write that made the fact
// true, on the hot path: an implementation must be cheap, must not block
// and must not call back into the engine. It never decides anything.
type Observer interface {
	// JobWaited reports that a job of pool reached stage waited after it
	// was queued. Reported once per stage per job when the engine can
	// tell; a job whose queued time is unknown is not reported.
	JobWaited(pool string, stage QueueStage, waited time.Duration)
	// InstanceChanged reports a committed status change of inst (now in
	// its new status) from the status it had before.
	InstanceChanged(inst *runner.Instance, from runner.Status)
	// DeleteRetried reports that a failed delete of a pool's instance was
	// scheduled to be tried again.
	DeleteRetried(pool string)
	// ReconcilePassed reports one finished reconcile pass and how long it
	// took.
	ReconcilePassed(rep ReconcileReport, took time.Duration)
	// WorkTakenOver reports that inst's create or delete (its status), left
	// by the worker that claimed it age ago with no outcome recorded, was
	// taken over; reason says how its abandonment was known (redelivery).
	WorkTakenOver(inst *runner.Instance, reason string, age time.Duration)
}

// NopObserver hears nothing; it is the default.
type NopObserver struct{}

func (NopObserver) JobWaited(string, QueueStage, time.Duration)           {}
func (NopObserver) InstanceChanged(*runner.Instance, runner.Status)       {}
func (NopObserver) DeleteRetried(string)                                  {}
func (NopObserver) ReconcilePassed(ReconcileReport, time.Duration)        {}
func (NopObserver) WorkTakenOver(*runner.Instance, string, time.Duration) {}

// Observers returns an Observer telling each of list, in order; nil
// entries are skipped.
func Observers(list ...Observer) Observer {
	var kept multiObserver
	for _, o := range list {
		if o != nil {
			kept = append(kept, o)
		}
	}
	switch len(kept) {
	case 0:
		return NopObserver{}
	case 1:
		return kept[0]
	}
	return kept
}

type multiObserver []Observer

func (m multiObserver) JobWaited(pool string, stage QueueStage, waited time.Duration) {
	for _, o := range m {
		o.JobWaited(pool, stage, waited)
	}
}

func (m multiObserver) InstanceChanged(inst *runner.Instance, from runner.Status) {
	for _, o := range m {
		o.InstanceChanged(inst, from)
	}
}

func (m multiObserver) DeleteRetried(pool string) {
	for _, o := range m {
		o.DeleteRetried(pool)
	}
}

func (m multiObserver) ReconcilePassed(rep ReconcileReport, took time.Duration) {
	for _, o := range m {
		o.ReconcilePassed(rep, took)
	}
}

func (m multiObserver) WorkTakenOver(inst *runner.Instance, reason string, age time.Duration) {
	for _, o := range m {
		o.WorkTakenOver(inst, reason, age)
	}
}
