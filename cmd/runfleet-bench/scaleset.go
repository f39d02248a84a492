package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/programtb"
)

// The scale-set runs (-scaleset): the pool is a scale-set pool, so serve
// needs GitHub itself rather than the simulation. The driver serves
// GitHub's REST API (githubtest: it mints the registration token) and the
// Actions service (scalesettest: the scale set, its message queue, the
// JIT configs) on loopback behind one API root, as github.com serves
// both, and queues the jobs on the Actions service as JobAssigned
// messages, github.com's flow. The provider stays the zero-latency
// simulated one, so the figures are runfleet's own intake path.

// benchScaleSet is the scale set the pool listens to.
const benchScaleSet = "bench-scale"

// githubTokenEnv carries the token the fake GitHub accepts to the child.
const githubTokenEnv = "RUNFLEET_BENCH_GITHUB_TOKEN"

// benchOrg owns the pool (and examples/payloads/queued.json's repository).
const benchOrg = "octo-org"

// scaleSetPollWindow is how long the fake holds a poll open with nothing
// to deliver before it answers 202. GitHub's is about 50 s; a message
// queued during a poll ends it at once either way, so the window only
// sets how often an idle listener polls again (and checks the
// statistics), and how long the driver waits for the first 202 that
// shows the listener is polling.
const scaleSetPollWindow = 3 * time.Second

// actionsWorld is the fake GitHub of one scale-set run: REST and the
// Actions service behind one front.
type actionsWorld struct {
	t       *programtb.TB
	rest    *githubtest.Server
	actions *scalesettest.Server
	front   *httptest.Server
	token   string
}

// startActionsWorld serves both fakes and the front on loopback.
func startActionsWorld() *actionsWorld {
	w := &actionsWorld{t: &programtb.TB{Program: "runfleet-bench"}, token: randomHex()}
	// The run measures runfleet, not GitHub's rate limit.
	w.rest = githubtest.NewServer(w.t, githubtest.WithToken(w.token), githubtest.WithRateLimit(100_000_000))
	w.rest.AddOrg(benchOrg)
	w.front, w.actions = scalesettest.BehindREST(w.t, w.rest.URL(), scalesettest.Minted(w.rest), scalesettest.Options{PollWindow: scaleSetPollWindow})
	return w
}

// close stops the servers and reports any misuse they saw.
func (w *actionsWorld) close() error {
	w.t.RunCleanups()
	return w.t.Err()
}

// childOptions make a child's pool the scale set's, on this GitHub.
func (w *actionsWorld) childOptions() childOptions {
	return childOptions{
		github: fmt.Sprintf("github: {base_url: %q, token_env: %s}", w.front.URL+githubtest.GHESPathPrefix+"/", githubTokenEnv),
		pool:   fmt.Sprintf("scale_set: {name: %s}", benchScaleSet),
		env:    []string{githubTokenEnv + "=" + w.token},
	}
}

// listening waits until the child's listener made the scale set and
// polls its queue: the first empty poll (202) shows both. It returns the
// scale set's id.
func (w *actionsWorld) listening(ctx context.Context, c *child) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, healthyWithin+2*scaleSetPollWindow)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if id, ok := w.actions.ScaleSetID(benchScaleSet); ok && w.actions.CountStatus(scalesettest.OpGetMessage, 202) > 0 {
			return id, nil
		}
		select {
		case <-tick.C:
		case <-c.proc.Exited():
			return 0, fmt.Errorf("%s exited before it listened: %v", c.name, c.proc.WaitErr())
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: the scale set's listener did not poll (scale set made: %v; its log: serve.log)", c.name, w.madeScaleSet())
		}
	}
}

func (w *actionsWorld) madeScaleSet() bool {
	_, ok := w.actions.ScaleSetID(benchScaleSet)
	return ok
}

// queue queues one job on the scale set, as github.com assigns it
// (JobAssigned), and returns its runner request id.
func (w *actionsWorld) queue(setID, runID int64) int64 {
	return w.actions.QueueJob(setID, scalesettest.JobSpec{
		Repository: benchOrg + "/hello-world", Labels: []string{benchScaleSet}, WorkflowRunID: runID, DisplayName: "build",
	})
}
