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
