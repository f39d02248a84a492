package scaleset_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// endpoint is one client call, made against a world with a scale set, a
// session and a runner.
type endpoint struct {
	op   scalesettest.Op
	call func(ctx context.Context, w *world, f *fixture) error
}

type fixture struct {
	set    *scaleset.ScaleSet
	m      *scaleset.MessageSession
	runner int64
}

var endpoints = []endpoint{
	{scalesettest.OpRegister, func(ctx context.Context, w *world, _ *fixture) error {
		w.fake.ExpireAdminTokens() // the next call must register
		_, err := w.client.RunnerGroupByName(ctx, "")
		return err
	}},
	{scalesettest.OpGetRunnerGroup, func(ctx context.Context, w *world, _ *fixture) error {
		_, err := w.client.RunnerGroupByName(ctx, "")
		return err
	}},
	{scalesettest.OpGetScaleSet, func(ctx context.Context, w *world, f *fixture) error {
		_, err := w.client.ScaleSetByID(ctx, f.set.ID)
		return err
	}},
	{scalesettest.OpCreateScaleSet, func(ctx context.Context, w *world, f *fixture) error {
		_, err := w.client.CreateScaleSet(ctx, scaleset.ScaleSetSpec{Name: "other", RunnerGroupID: f.set.RunnerGroupID})
		return err
	}},
	{scalesettest.OpUpdateScaleSet, func(ctx context.Context, w *world, f *fixture) error {
		_, err := w.client.UpdateScaleSet(ctx, f.set.ID, scaleset.ScaleSetSpec{Name: f.set.Name, RunnerGroupID: f.set.RunnerGroupID})
		return err
	}},
	{scalesettest.OpCreateSession, func(ctx context.Context, w *world, f *fixture) error {
		_ = f.m.Close(ctx)
		_, err := w.client.CreateSession(ctx, f.set.ID, "host")
		return err
	}},
	{scalesettest.OpRefreshSession, func(ctx context.Context, _ *world, f *fixture) error { return f.m.Refresh(ctx) }},
	{scalesettest.OpGetMessage, func(ctx context.Context, _ *world, f *fixture) error {
		_, err := f.m.GetMessage(ctx, 0, 1)
		return err
	}},
	{scalesettest.OpDeleteMessage, func(ctx context.Context, _ *world, f *fixture) error { return f.m.DeleteMessage(ctx, 1) }},
	{scalesettest.OpAcquireJobs, func(ctx context.Context, _ *world, f *fixture) error {
		_, err := f.m.AcquireJobs(ctx, []int64{1})
		return err
	}},
	{scalesettest.OpGenerateJIT, func(ctx context.Context, w *world, f *fixture) error {
		_, err := w.client.GenerateJITConfig(ctx, f.set.ID, "another", "")
		return err
	}},
	{scalesettest.OpGetRunner, func(ctx context.Context, w *world, f *fixture) error {
		_, err := w.client.RunnerByID(ctx, f.runner)
		return err
	}},
	{scalesettest.OpRemoveRunner, func(ctx context.Context, w *world, f *fixture) error {
		return w.client.RemoveRunner(ctx, f.runner)
	}},
	{scalesettest.OpDeleteSession, func(ctx context.Context, _ *world, f *fixture) error { return f.m.Close(ctx) }},
	{scalesettest.OpDeleteScaleSet, func(ctx context.Context, w *world, f *fixture) error {
		return w.client.DeleteScaleSet(ctx, f.set.ID)
	}},
}

func newFixture(t *testing.T, w *world) *fixture {
	t.Helper()
	set := w.scaleSet(t, "linux")
	w.fake.QueueJob(set.ID, scalesettest.JobSpec{}) // message 1, job 1 exist
	m, err := w.client.CreateSession(w.ctx, set.ID, "host")
	if err != nil {
		t.Fatal(err)
	}
	jit, err := w.client.GenerateJITConfig(w.ctx, set.ID, "runner-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{set: set, m: m, runner: jit.Runner.ID}
}

// Every endpoint: 5xx is ErrServer (retryable), 429 a rate limit with
// Retry-After readable as *github.RateLimitError, and a slow answer past
// the deadline ErrTransport; each call works again afterwards.
func TestEveryEndpointUnderFaults(t *testing.T) {
	faults := []struct {
		name  string
		arm   func(f *scalesettest.Server, op scalesettest.Op)
		check func(t *testing.T, err error)
	}{
		{"500", func(f *scalesettest.Server, op scalesettest.Op) { f.FailNext(op, http.StatusInternalServerError, 1) },
			func(t *testing.T, err error) {
				e := wantKind(t, err, scaleset.ErrServer)
				if !e.Retryable() || e.StatusCode != 500 || e.TypeName == "" {
					t.Errorf("%+v: want retryable 500 with the exception name", e)
				}
			}},
		{"503", func(f *scalesettest.Server, op scalesettest.Op) { f.FailNext(op, http.StatusServiceUnavailable, 1) },
			func(t *testing.T, err error) { wantKind(t, err, scaleset.ErrServer) }},
		{"429", func(f *scalesettest.Server, op scalesettest.Op) { f.RateLimitNext(op, 30*time.Second) },
			func(t *testing.T, err error) {
				wantKind(t, err, scaleset.ErrRateLimited)
				var rl *github.RateLimitError
				if !errors.As(err, &rl) {
					t.Fatalf("%v: no *github.RateLimitError", err)
				}
				if wait := time.Until(rl.RetryAt); wait < 25*time.Second || wait > 35*time.Second {
					t.Errorf("RetryAt in %v, want about 30s", wait)
				}
			}},
		{"slow", func(f *scalesettest.Server, op scalesettest.Op) { f.SlowNext(op, time.Second, 1) },
			func(t *testing.T, err error) {
				if !errors.Is(err, scaleset.ErrTransport) || !scaleset.IsRetryable(err) {
					t.Errorf("%v: want retryable ErrTransport", err)
				}
			}},
	}
	for _, fault := range faults {
		for _, ep := range endpoints {
			t.Run(fault.name+"/"+string(ep.op), func(t *testing.T) {
				fake := scalesettest.New(t, scalesettest.Options{PollWindow: 50 * time.Millisecond})
				cfg := fake.Config()
				cfg.CallTimeout, cfg.PollTimeout = 300*time.Millisecond, 300*time.Millisecond
				client, err := scaleset.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				w := &world{fake: fake, client: client, ctx: t.Context()}
				f := newFixture(t, w)
				fault.arm(fake, ep.op)
				fault.check(t, ep.call(w.ctx, w, f))
				if err := ep.call(w.ctx, w, f); err != nil && !expectedSecondError(err) {
					t.Errorf("after the fault: %v", err)
				}
			})
		}
	}
}

// expectedSecondError: calls that consume what they act on (a removed
// runner, a deleted session, a taken name) may fail the second time for
// that reason alone.
func expectedSecondError(err error) bool {
	for _, k := range []error{scaleset.ErrRunnerNotFound, scaleset.ErrScaleSetNotFound, scaleset.ErrRunnerExists, scaleset.ErrUnexpected, scaleset.ErrSessionConflict} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// A caller's cancelled context ends a long poll at once.
func TestPollHonoursCallerContext(t *testing.T) {
	w := newWorld(t, scalesettest.Options{PollWindow: 10 * time.Second})
	m := w.session(t, w.scaleSet(t, "linux"))
	ctx, cancel := context.WithTimeout(w.ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.GetMessage(ctx, 0, 1)
	if !errors.Is(err, scaleset.ErrTransport) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v: want ErrTransport wrapping the deadline", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("the poll outlived its context")
	}
}
