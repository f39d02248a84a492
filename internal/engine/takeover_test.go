package engine

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestDecideDeadWork(t *testing.T) {
	until := decisionNow.Add(time.Minute)
	claimed := func(st runner.Status, claim string, until time.Time) *runner.Instance {
		return instanceIn(st, func(i *runner.Instance) { i.Claim, i.ClaimUntil = claim, until })
	}
	held := &runner.Lease{Name: "replica/a", Holder: "a", Version: 3, ExpiresAt: decisionNow.Add(2 * time.Minute)}
	expired := &runner.Lease{Name: "replica/a", Holder: "a", Version: 3, ExpiresAt: decisionNow}
	released := &runner.Lease{Name: "replica/a", Version: 4}
	renewedByAnother := &runner.Lease{Name: "replica/a", Holder: "b", Version: 5, ExpiresAt: decisionNow.Add(time.Minute)}
	never := &runner.Lease{Name: "replica/a"}
	for _, tc := range []struct {
		name  string
		inst  *runner.Instance
		lease *runner.Lease
		self  string
		at    time.Time
		want  deadWork
	}{
		{"creating, holder alive", claimed(runner.StatusCreating, "m1#1@a", until), held, "", decisionNow, workAlive},
		{"deleting, holder alive", claimed(runner.StatusDeleting, "m1#1@a", until), held, "", decisionNow, workAlive},
		{"creating, holder's lease expired", claimed(runner.StatusCreating, "m1#1@a", until), expired, "", decisionNow, holderLapsed},
		{"deleting, holder's lease released", claimed(runner.StatusDeleting, "m1#1@a", until), released, "", decisionNow, holderLapsed},
		{"a lease not the holder's", claimed(runner.StatusCreating, "m1#1@a", until), renewedByAnother, "", decisionNow, holderLapsed},
		{"no liveness record, within its bound", claimed(runner.StatusCreating, "m1#1@lambda-req", until), never, "", decisionNow, workAlive},
		{"no liveness record, at its bound", claimed(runner.StatusCreating, "m1#1@lambda-req", until), never, "", until, claimExpired},
		{"holder alive, past its bound", claimed(runner.StatusCreating, "m1#1@a", until), held, "", until, claimExpired},
		{"no holder, within its bound", claimed(runner.StatusDeleting, "m1#1", until), nil, "", decisionNow, workAlive},
		{"no holder, past its bound", claimed(runner.StatusDeleting, "m1#1", until), nil, "", until.Add(time.Second), claimExpired},
		{"no holder, no bound", claimed(runner.StatusCreating, "m1#1", time.Time{}), nil, "", until, workAlive},
		{"not claimed", claimed(runner.StatusCreating, "", time.Time{}), nil, "", until, workAlive},
		{"moved on", claimed(runner.StatusRunning, "m1#1@a", until), expired, "", until, workAlive},
		{"pending again", claimed(runner.StatusPendingDelete, "m1#1@a", until), expired, "", until, workAlive},
		{"no instance", nil, expired, "", until, workAlive},
		{"this process's own earlier takeover", claimed(runner.StatusCreating, "-#0@b", until), renewedByAnother, "b", decisionNow, ownTakeover},
		{"another live process's takeover", claimed(runner.StatusCreating, "-#0@b", until), renewedByAnother, "c", decisionNow, workAlive},
		{"a worker's claim of this process", claimed(runner.StatusCreating, "m1#1@b", until), renewedByAnother, "b", decisionNow, workAlive},
	} {
		if got := decideDeadWork(tc.inst, tc.lease, tc.self, tc.at); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A claim names its delivery and its holder; the delivery's part parses as
// before, and a claim without a holder reads as before.
func TestClaimNamesTheHolder(t *testing.T) {
	for _, tc := range []struct {
		ctx    context.Context
		claim  string
		holder string
		d      delivery
	}{
		{WithHolder(WithDelivery(context.Background(), "m1", 2), "host-7-ab", nil), "m1#2@host-7-ab", "host-7-ab", delivery{"m1", 2}},
		{WithDelivery(context.Background(), "m1", 2), "m1#2", "", delivery{"m1", 2}},
		{WithHolder(context.Background(), "host-7-ab~2", nil), "-#0@host-7-ab~2", "host-7-ab~2", delivery{"-", 0}},
		{context.Background(), "", "", delivery{}},
	} {
		got := claimOf(tc.ctx)
		if got != tc.claim || claimHolder(got) != tc.holder || parseClaim(got) != tc.d {
			t.Errorf("claim %q (holder %q, delivery %+v), want %q (%q, %+v)", got, claimHolder(got), parseClaim(got), tc.claim, tc.holder, tc.d)
		}
	}
}
