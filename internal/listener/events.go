package listener

import (
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// SourceScaleSet is a message of a runner scale set's queue; its key is
// KeyOf(scale set id, message id).
const SourceScaleSet engine.EventSource = "scaleset"

// KeyOf names a scale-set message as an event key: the same message
// delivered again carries the same key.
func KeyOf(scaleSetID, messageID int64) string {
	return fmt.Sprintf("scaleset:%d:%d", scaleSetID, messageID)
}

// jobEvent is what a scale-set job message tells the ledger about its job,
// for pool; ok is false for a message the ledger does not act on.
//
//   - JobAssigned: the job is the scale set's: queued demand. A job
//     assigned again after a canceled assignment is queued again, which
//     reopens it (see below).
//   - JobAvailable: nothing yet. Where the server expects it (GHES) the
//     listener acquires the job, and JobAssigned follows; demand opened on
//     availability would make a runner for a job another scale set may
//     acquire.
//   - JobStarted: in_progress, with the runner that took it.
//   - JobCompleted with a runner: completed.
//   - JobCompleted, canceled, without a runner: GitHub took back an
//     assignment no runner took in time and will assign the job again (up
//     to three times). It is recorded as waiting: demand paused, not
//     closed, and the instance made for the job left alone, so the
//     re-assignment (queued) reopens the job and finds its runner — or, if
//     the runner was reaped meanwhile, makes a new one. Closing it would
//     strand the job: a closed job never asks for a runner again. A replay
//     of the cancel after the re-assignment is harmless for the same
//     reason: it deletes nothing.
//
// Repository is the message's owner/repository, for the operator (why,
// cost by repository) and for the re-run of a job a spot interruption
// failed, which finds the job's REST id among its run's jobs by the runner
// that ran it. Org and Enterprise stay empty: the pool is named (Pool),
// not matched. The engine never asks the REST API about a scale-set job by
// its ledger id (runner.RunnerRequestID tells the two apart).
func jobEvent(pool string, ev scaleset.Event) (runner.JobEvent, bool) {
	ref := ev.Job()
	// An id with the scale-set bit set already could not be told apart
	// from its ledger id.
	if _, marked := runner.RunnerRequestID(ref.RunnerRequestID); ref.RunnerRequestID <= 0 || marked {
		return runner.JobEvent{}, false
	}
	// RunnerID is the scale set's id of the runner, the id a scale-set
	// pool's instance registered under (its JIT config came from the scale
	// set: scaleset.Runners), so the engine can tell an earlier
	// registration of a runner name from the current one.
	out := runner.JobEvent{
		JobID:      runner.ScaleSetJobID(ref.RunnerRequestID),
		RunID:      ref.WorkflowRunID,
		RunAttempt: 1,
		Repository: repository(ref),
		Labels:     append([]string(nil), ref.RequestLabels...),
		Pool:       pool,
		// The assignment the message is about: a copy of an earlier
		// assignment's message, delivered after a later one, is stale
		// (the ledger's staleJobEvent).
		AssignedAt: ref.ScaleSetAssignTime.Time,
	}
	switch e := ev.(type) {
	case *scaleset.JobAssigned:
		out.Action = runner.ActionQueued
	case *scaleset.JobStarted:
		out.Action, out.RunnerName, out.RunnerID = runner.ActionInProgress, e.RunnerName, e.RunnerID
	case *scaleset.JobCompleted:
		if e.RunnerName == "" && e.RunnerID == 0 && strings.EqualFold(e.Result, scaleset.ResultCanceled) {
			out.Action = runner.ActionWaiting
			return out, true
		}
		out.Action, out.RunnerName, out.RunnerID = runner.ActionCompleted, e.RunnerName, e.RunnerID
		out.Conclusion = conclusion(e.Result)
		out.CompletedAt = e.FinishTime.Time
	default:
		return runner.JobEvent{}, false
	}
	return out, true
}

// conclusion is a scale-set result in the webhook's words, which the
// engine's interruption and logging read.
func conclusion(result string) string {
	switch strings.ToLower(result) {
	case scaleset.ResultSucceeded:
		return "success"
	case scaleset.ResultFailed:
		return "failure"
	case scaleset.ResultCanceled:
		return "cancelled"
	}
	return strings.ToLower(result)
}

// repository is a job message's "owner/repository", or "" when it does not
// name both. GitHub's messages carry the owner's login and the
// repository's name apart; a name that is already "owner/repository" is
// taken as it is.
func repository(ref scaleset.JobRef) string {
	switch {
	case strings.Contains(ref.RepositoryName, "/"):
		return ref.RepositoryName
	case ref.OwnerName == "" || ref.RepositoryName == "":
		return ""
	}
	return ref.OwnerName + "/" + ref.RepositoryName
}
