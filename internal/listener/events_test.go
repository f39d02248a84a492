package listener

import (
	"testing"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/runner"
)

// Each scale-set job message maps to one ledger action, keyed by its
// runner request id in an id space REST job ids never reach.
func TestJobMessagesMapToLedgerEvents(t *testing.T) {
	ref := scaleset.JobRef{RunnerRequestID: 42, WorkflowRunID: 9, OwnerName: "octo-org", RepositoryName: "app", RequestLabels: []string{"linux-scale"}}
	cases := []struct {
		name   string
		ev     scaleset.Event
		action runner.JobAction
		runner string
		concl  string
		acted  bool
	}{
		{"assigned", &scaleset.JobAssigned{JobRef: ref}, runner.ActionQueued, "", "", true},
		{"available: acquired, not demand yet", &scaleset.JobAvailable{JobRef: ref}, "", "", "", false},
		{"started", &scaleset.JobStarted{JobRef: ref, RunnerID: 5, RunnerName: "r-1"}, runner.ActionInProgress, "r-1", "", true},
		{"completed", &scaleset.JobCompleted{JobRef: ref, Result: "succeeded", RunnerID: 5, RunnerName: "r-1"}, runner.ActionCompleted, "r-1", "success", true},
		{"failed", &scaleset.JobCompleted{JobRef: ref, Result: "failed", RunnerID: 5, RunnerName: "r-1"}, runner.ActionCompleted, "r-1", "failure", true},
		{"canceled on its runner", &scaleset.JobCompleted{JobRef: ref, Result: "canceled", RunnerID: 5, RunnerName: "r-1"}, runner.ActionCompleted, "r-1", "cancelled", true},
		{"canceled assignment: paused, not closed", &scaleset.JobCompleted{JobRef: ref, Result: "canceled"}, runner.ActionWaiting, "", "", true},
		{"unknown", &scaleset.UnknownEvent{Type: "JobFoo"}, "", "", "", false},
		{"no request id", &scaleset.JobAssigned{}, "", "", "", false},
	}
	for _, tc := range cases {
		got, acted := jobEvent("pool-a", tc.ev)
		if acted != tc.acted {
			t.Errorf("%s: acted %v, want %v", tc.name, acted, tc.acted)
			continue
		}
		if !acted {
			continue
		}
		if got.Action != tc.action || got.RunnerName != tc.runner || got.Conclusion != tc.concl {
			t.Errorf("%s: %s runner %q conclusion %q; want %s %q %q", tc.name, got.Action, got.RunnerName, got.Conclusion, tc.action, tc.runner, tc.concl)
		}
		if got.JobID != runner.ScaleSetJobID(42) || got.RunAttempt != 1 || got.Pool != "pool-a" || got.Repository != "octo-org/app" || got.RunID != 9 {
			t.Errorf("%s: event %+v", tc.name, got)
		}
	}
}

func TestScaleSetJobIDsNeverCollideWithRESTJobIDs(t *testing.T) {
	const restJobID = 41_000_000_000 // GitHub's workflow-job ids, today
	if _, ours := runner.RunnerRequestID(restJobID); ours {
		t.Fatal("a REST job id reads as a scale-set job's")
	}
	id := runner.ScaleSetJobID(7)
	if id <= 0 || id == 7 {
		t.Fatalf("runner.ScaleSetJobID(7) = %d", id)
	}
	if rr, ours := runner.RunnerRequestID(id); !ours || rr != 7 {
		t.Fatalf("runner.RunnerRequestID(runner.ScaleSetJobID(7)) = %d, %v", rr, ours)
	}
	if _, ok := jobEvent("p", &scaleset.JobAssigned{JobRef: scaleset.JobRef{RunnerRequestID: 1 << 62}}); ok {
		t.Fatal("a runner request id at the marker bit was accepted")
	}
}

// A message names the owner and the repository apart; the ledger keeps
// "owner/repository", or nothing when one is missing.
func TestRepositoryOfAJobMessage(t *testing.T) {
	cases := []struct {
		owner, repo, want string
	}{
		{"octo-org", "app", "octo-org/app"},
		{"", "octo-org/app", "octo-org/app"},
		{"octo-org", "", ""},
		{"", "app", ""},
	}
	for _, tc := range cases {
		if got := repository(scaleset.JobRef{OwnerName: tc.owner, RepositoryName: tc.repo}); got != tc.want {
			t.Errorf("repository(%q, %q) = %q, want %q", tc.owner, tc.repo, got, tc.want)
		}
	}
}
