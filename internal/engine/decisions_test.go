package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// The decisions the worker and the intake take over one instance record,
// each a pure function of the record as read: what the compare-and-set
// writes, or errNoChange.

var decisionNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func instanceIn(st runner.Status, mod func(i *runner.Instance)) *runner.Instance {
	i := &runner.Instance{Name: "runfleet-p-1-1", Pool: "p", Status: st, RunnerStatus: runner.RunnerPending, CreateAttempt: 1, Version: 3}
	if mod != nil {
		mod(i)
	}
	return i
}

// summary is what a decision wrote, or why it wrote nothing.
func summary(next *runner.Instance, err error) string {
	switch {
	case errors.Is(err, errNoChange):
		return "no change"
	case err != nil:
		return "error"
	}
	return fmt.Sprintf("%s/%s provider=%q runner=%d fault=%q", next.Status, next.RunnerStatus, next.ProviderID, next.GitHubRunnerID, next.ProviderFault)
}

func TestCreated(t *testing.T) {
	claimed := instanceIn(runner.StatusCreating, nil)
	for _, tc := range []struct {
		name string
		cur  *runner.Instance
		want string
	}{
		{"made", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.ProviderFault = "earlier" }),
			`running/pending provider="i-1" runner=7 fault=""`},
		{"its job ended meanwhile", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.RunnerStatus = runner.RunnerTerminated }),
			`pending_delete/terminated provider="i-1" runner=7 fault=""`},
		{"force-deleted meanwhile", instanceIn(runner.StatusPendingForceDelete, nil),
			`pending_force_delete/pending provider="i-1" runner=7 fault=""`},
		{"a later attempt's", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.CreateAttempt = 2 }),
			`creating/pending provider="i-1" runner=7 fault=""`},
		{"made already recorded", instanceIn(runner.StatusPendingDelete, func(i *runner.Instance) { i.ProviderID, i.GitHubRunnerID = "i-0", 6 }),
			"no change"},
		{"deleted", instanceIn(runner.StatusDeleted, nil), "no change"},
	} {
		if got := summary(created(tc.cur, claimed, "i-1", 7, decisionNow)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestFailedCreate(t *testing.T) {
	claimed := instanceIn(runner.StatusCreating, nil)
	provider := createFailure{cause: errors.New("boom"), fault: "boom", runnerID: 7, machineMayExist: true, providerID: "i-1"}
	for _, tc := range []struct {
		name string
		cur  *runner.Instance
		c    createCleanup
		want string
	}{
		{"retried", claimed, createCleanup{cleaned: true, retry: true, delay: time.Second}, `pending_create/pending provider="" runner=0 fault="boom"`},
		{"for good: what is left is kept", claimed, createCleanup{}, `error/pending provider="i-1" runner=7 fault="boom"`},
		{"runner busy", claimed, createCleanup{busy: true}, `error/active provider="i-1" runner=7 fault="boom"`},
		{"a later attempt's", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.CreateAttempt = 2 }), createCleanup{}, "no change"},
		{"moved on", instanceIn(runner.StatusPendingForceDelete, nil), createCleanup{}, "no change"},
	} {
		next, err := failedCreate(tc.cur, claimed, provider, tc.c, decisionNow)
		if got := summary(next, err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if err == nil && tc.c.retry && !next.NextAttemptAt.Equal(decisionNow.Add(tc.c.delay)) {
			t.Errorf("%s: next attempt at %v, want after the delay", tc.name, next.NextAttemptAt)
		}
	}
}

func TestRetriesCreate(t *testing.T) {
	first, last := instanceIn(runner.StatusCreating, nil), instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.CreateAttempt = 3 })
	boom := createFailure{cause: errors.New("boom")}
	for _, tc := range []struct {
		name    string
		claimed *runner.Instance
		f       createFailure
		cleaned bool
		want    bool
	}{
		{"cleaned, attempts left", first, boom, true, true},
		{"not cleaned", first, boom, false, false},
		{"no attempts left", last, boom, true, false},
		{"misconfigured App", first, createFailure{cause: fmt.Errorf("jit: %w", github.ErrMisconfigured)}, true, false},
		{"shape refused", first, createFailure{cause: &runner.ShapeRefusal{Reason: runner.RefusedMalformedLabel}}, true, false},
		// make sim seed 17091: its runner ran another job to its end while
		// the create was in flight; that job's instance serves this one's.
		{"runner already ran a job", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.RunnerStatus = runner.RunnerTerminated }), boom, true, false},
	} {
		if got := retriesCreate(tc.claimed, tc.f, tc.cleaned, 3); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDeleted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cur    *runner.Instance
		faults []string
		want   string
	}{
		{"clean", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.NextAttemptAt = decisionNow }), nil,
			`deleted/terminated provider="" runner=0 fault=""`},
		{"forced through faults", instanceIn(runner.StatusDeleting, nil), []string{"github 502", "provider timeout"},
			"deleted/terminated provider=\"\" runner=0 fault=\"github 502\\nprovider timeout\""},
		{"no longer deleting", instanceIn(runner.StatusPendingDelete, nil), nil, "no change"},
	} {
		next, err := deleted(tc.cur, tc.faults, decisionNow)
		if got := summary(next, err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if err == nil && (!next.ExpiresAt.Equal(decisionNow.Add(store.DeletedRetention)) || !next.NextAttemptAt.IsZero()) {
			t.Errorf("%s: expires %v, next attempt %v", tc.name, next.ExpiresAt, next.NextAttemptAt)
		}
	}
}

// A failed ordinary delete records its retry only over its own claim: a
// force delete claimed by another worker during the attempt is theirs.
func TestStillOurDelete(t *testing.T) {
	claimed := instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.Claim = "m1#1" })
	for _, tc := range []struct {
		name string
		cur  *runner.Instance
		want bool
	}{
		{"as claimed", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.Claim = "m1#1"; i.Version = 9 }), true},
		{"forced, then claimed by another worker", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.Claim = "m3#1" }), false},
		{"taken over by the message's redelivery", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.Claim = "m1#2" }), false},
		{"forced, not yet claimed", instanceIn(runner.StatusPendingForceDelete, func(i *runner.Instance) { i.Claim = "m1#1" }), false},
		{"deleted", instanceIn(runner.StatusDeleted, nil), false},
	} {
		if got := stillOurDelete(tc.cur, claimed); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJobCompleted(t *testing.T) {
	const job = 1
	for _, tc := range []struct {
		name       string
		cur        *runner.Instance
		runnerless bool
		want       string
	}{
		{"ran this job", instanceIn(runner.StatusRunning, func(i *runner.Instance) { i.RunnerStatus, i.ActiveJobID = runner.RunnerActive, job }), false,
			`pending_delete/terminated provider="" runner=0 fault=""`},
		{"named by the event, bound to none", instanceIn(runner.StatusRunning, nil), false,
			`pending_delete/terminated provider="" runner=0 fault=""`},
		{"made for it, never ran it", instanceIn(runner.StatusRunning, nil), true,
			`pending_delete/pending provider="" runner=0 fault=""`},
		{"ran another job", instanceIn(runner.StatusRunning, func(i *runner.Instance) { i.RunnerStatus, i.ActiveJobID = runner.RunnerActive, 2 }), false,
			`pending_delete/active provider="" runner=0 fault=""`},
		{"being created", instanceIn(runner.StatusCreating, nil), true,
			`creating/terminated provider="" runner=0 fault=""`},
		{"being created, marked already", instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.RunnerStatus = runner.RunnerTerminated }), true,
			"no change"},
		// A completed during a delete attempt marks the runner done, so a
		// 422 that attempt meets is GitHub's lag, retried soon (issue #32).
		{"being deleted, ran this job", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.RunnerStatus, i.ActiveJobID = runner.RunnerActive, job }), false,
			`deleting/terminated provider="" runner=0 fault=""`},
		{"being deleted, named by the event", instanceIn(runner.StatusDeleting, nil), false,
			`deleting/terminated provider="" runner=0 fault=""`},
		{"being deleted, made for it, never ran it", instanceIn(runner.StatusDeleting, nil), true, "no change"},
		{"being deleted, ran another job", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.RunnerStatus, i.ActiveJobID = runner.RunnerActive, 2 }), false,
			"no change"},
		{"being deleted, marked already", instanceIn(runner.StatusDeleting, func(i *runner.Instance) { i.RunnerStatus = runner.RunnerTerminated }), false,
			"no change"},
		{"pending delete", instanceIn(runner.StatusPendingDelete, nil), false, "no change"},
		{"deleted", instanceIn(runner.StatusDeleted, nil), false, "no change"},
	} {
		if got := summary(jobCompleted(tc.cur, job, tc.runnerless, decisionNow)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// How long a failed delete waits: a busy runner whose job's completed has
// arrived is asked again within seconds, not after delete_backoff_max.
func TestDeleteRetryDelay(t *testing.T) {
	const backoffMax = 5 * time.Minute
	busy := fmt.Errorf("%w: 422", github.ErrRunnerBusy)
	limited := &github.RateLimitError{RetryAt: decisionNow.Add(time.Minute)}
	for _, tc := range []struct {
		name      string
		cause     error
		completed bool
		backoff   time.Duration
		want      time.Duration
	}{
		{"provider fault", errors.New("boom"), false, 2 * time.Second, 2 * time.Second},
		{"provider fault, completed seen", errors.New("boom"), true, 2 * time.Second, 2 * time.Second},
		{"rate limited", limited, false, time.Second, time.Minute},
		{"rate limited, backoff past the reset", limited, false, 2 * time.Minute, 2 * time.Minute},
		{"busy, no completed yet", busy, false, time.Second, backoffMax},
		{"busy after the job's completed", busy, true, time.Second, time.Second},
		{"busy after the job's completed, many attempts", busy, true, backoffMax, busyAfterCompletedMax},
	} {
		if got := deleteRetryDelay(tc.cause, tc.completed, tc.backoff, backoffMax, decisionNow); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Whose work a delivery may take over, and when: only work its own
// message claimed and left in creating or deleting — at once when the same
// receive claimed it (the worker doing its message again) or once the
// earlier receive's bound has passed; another message's claim is a live
// worker's (or the reconciler's to recover).
func TestDecideTakeover(t *testing.T) {
	until := decisionNow.Add(time.Minute)
	claimed := func(st runner.Status, claim string, until time.Time) *runner.Instance {
		return instanceIn(st, func(i *runner.Instance) { i.Claim, i.ClaimUntil = claim, until })
	}
	first, second := delivery{id: "m1", receive: 1}, delivery{id: "m1", receive: 2}
	for _, tc := range []struct {
		name string
		inst *runner.Instance
		d    delivery
		at   time.Time
		want takeover
	}{
		{"creating, this receive's own claim", claimed(runner.StatusCreating, "m1#1", until), first, decisionNow, takeOverNow},
		{"deleting, this receive's own claim", claimed(runner.StatusDeleting, "m1#1", until), first, decisionNow, takeOverNow},
		{"earlier receive, its worker may be finishing", claimed(runner.StatusCreating, "m1#1", until), second, decisionNow, takeOverLater},
		{"earlier receive, at its bound", claimed(runner.StatusCreating, "m1#1", until), second, until, takeOverNow},
		{"earlier receive, work with no deadline", claimed(runner.StatusDeleting, "m1#1", time.Time{}), second, decisionNow, notOurs},
		{"same receive, work with no deadline that returned", claimed(runner.StatusDeleting, "m1#1", time.Time{}), first, decisionNow, takeOverNow},
		{"another message's claim", claimed(runner.StatusCreating, "m2#1", until), first, until, notOurs},
		{"claimed before claims were named", claimed(runner.StatusCreating, "", time.Time{}), first, decisionNow, notOurs},
		{"a claim that does not parse", claimed(runner.StatusCreating, "m1", time.Time{}), first, decisionNow, notOurs},
		{"no delivery named", claimed(runner.StatusCreating, "m1#1", until), delivery{}, until, notOurs},
		{"finished since", claimed(runner.StatusRunning, "m1#1", until), first, decisionNow, notOurs},
		{"pending again", claimed(runner.StatusPendingDelete, "m1#1", until), first, decisionNow, notOurs},
		{"no instance", nil, first, decisionNow, notOurs},
	} {
		if got := decideTakeover(tc.inst, tc.d, tc.at); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A change of status ends a claim: the claim names the work holding the
// instance in the status it was made for, never a later one.
func TestTransitionEndsTheClaim(t *testing.T) {
	cur := instanceIn(runner.StatusCreating, func(i *runner.Instance) { i.Claim, i.ClaimUntil = "m1#1", decisionNow })
	next, err := cur.Transition(runner.StatusRunning, decisionNow)
	if err != nil || next.Claim != "" || !next.ClaimUntil.IsZero() {
		t.Fatalf("claim after creating -> running: %q until %s (%v), want none", next.Claim, next.ClaimUntil, err)
	}
	same, err := cur.Transition(runner.StatusCreating, decisionNow)
	if err != nil || same.Claim != "m1#1" {
		t.Fatalf("claim kept in creating: %q (%v), want m1#1", same.Claim, err)
	}
}

// When a worker does a failed message again: 1 s doubling, four times,
// never when the wait would outlast the message's visibility.
func TestRetryFailedAfter(t *testing.T) {
	for _, tc := range []struct {
		try       int
		left      time.Duration
		want      time.Duration
		wantAgain bool
	}{
		{0, 5 * time.Minute, time.Second, true},
		{1, 5 * time.Minute, 2 * time.Second, true},
		{3, 5 * time.Minute, 8 * time.Second, true},
		{4, 5 * time.Minute, 0, false},
		{2, 3 * time.Second, 4 * time.Second, false},
	} {
		got, again := retryFailedAfter(tc.try, time.Second, tc.left)
		if got != tc.want || again != tc.wantAgain {
			t.Errorf("try %d with %s left: %s %v, want %s %v", tc.try, tc.left, got, again, tc.want, tc.wantAgain)
		}
	}
}
