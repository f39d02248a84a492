package engine_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// The intake port is idempotent by the job, whatever the event's source or
// key: the same queued job through the webhook (twice, one delivery id),
// through another intake and under another key makes one instance.
func TestHandleJobEventIsIdempotentByJobWhateverTheIntake(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	ev := enginetest.Event(runner.ActionQueued, 6001, "")
	for i, meta := range []engine.EventMeta{
		engine.Webhook("d-1"),
		engine.Webhook("d-1"),
		{Source: "delivery_log", Key: "d-1"},
		{Source: "scale_set", Key: "m-7"},
	} {
		out, err := w.Engine.HandleJobEvent(ctx, ev, meta)
		if err != nil {
			t.Fatalf("%+v: %v", meta, err)
		}
		want := engine.ResultDuplicate
		if i == 0 {
			want = engine.ResultCreated
		}
		if out.Result != want || out.Instance != enginetest.InstanceName(6001) {
			t.Errorf("event %d (%+v): %+v; want %s of %s", i, meta, out, want, enginetest.InstanceName(6001))
		}
	}
	if live := w.Live(); len(live) != 1 {
		t.Errorf("%d live instances, want 1: %v", len(live), live)
	}
}

// An event that names its pool (a scale set is its pool) goes to that
// pool whatever its labels and owner say; one naming a pool this process
// does not serve is unmatched, as a job no pool covers is.
func TestJobEventNamingItsPoolIsNotMatchedByLabels(t *testing.T) {
	pools := runner.Pools{
		enginetest.OnePool(nil)[0],
		enginetest.OnePool(func(p *runner.Pool) { p.Name, p.Labels = "scale", []string{"scale-only"} })[0],
	}
	w := enginetest.NewWorld(t, enginetest.Options{Pools: pools})
	ctx := context.Background()
	ev := runner.JobEvent{Action: runner.ActionQueued, JobID: 6101, RunAttempt: 1, Labels: []string{"linux-scale"}, Pool: "scale"}
	out, err := w.Engine.HandleJobEvent(ctx, ev, engine.EventMeta{Source: "scaleset", Key: "scaleset:1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Pool != "scale" || out.Instance != runner.InstanceName("scale", 6101, 1) {
		t.Fatalf("outcome %+v, want an instance of pool scale", out)
	}
	ev.JobID, ev.Pool = 6102, "gone"
	out, err = w.Engine.HandleJobEvent(ctx, ev, engine.EventMeta{Source: "scaleset", Key: "scaleset:1:2"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result != engine.ResultNoMatchingPool || out.Instance != "" {
		t.Fatalf("outcome %+v for an unknown pool, want unmatched", out)
	}
}

// GitHub also sends webhooks for a scale set's jobs. One naming the scale
// set of a scale-set pool makes nothing and records nothing: the pool is
// never matched by labels, and the job is its listener's.
func TestWebhookAboutAScaleSetJobMakesNothing(t *testing.T) {
	pools := enginetest.OnePool(func(p *runner.Pool) { p.ScaleSet = "linux-scale" })
	w := enginetest.NewWorld(t, enginetest.Options{Pools: pools})
	ev := enginetest.Event(runner.ActionQueued, 6201, "")
	ev.Labels = []string{"linux-scale"}
	if out := w.Deliver(ev); out.Result != engine.ResultNoMatchingPool || out.Instance != "" {
		t.Fatalf("outcome %+v, want no pool and no instance", out)
	}
	if _, err := w.Store.GetJob(context.Background(), runner.JobKey(6201, 1)); err == nil {
		t.Fatal("the webhook's job was recorded")
	}
	if live := w.Live(); len(live) != 0 {
		t.Fatalf("%d live instances, want none", len(live))
	}
}
