package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/warm"
	"github.com/runfleet/runfleet/providers"
)

// warmShapes are the shape labels of the warm runners a pool with shapes
// should add, one entry per runner (nil: the pool's own runner), so that
// its idle runners come in the shapes its jobs ask for, in proportion
// (warm.Apportion). The jobs read are those holding one of the pool's
// live instances now — running, or made in the last minutes and still
// booting — which are the pool's recent jobs without a read of the
// ledger, and which carry their shape labels (Pool.JobRunnerLabels).
// want is the pool's warm size this pass and idle its idle runners; the
// runners to add are the shortfall of each shape below its part, at most
// want minus the idle runners of every shape (an idle runner of a shape no
// longer asked for still counts until the idle-surplus rule removes it).
// A pool without shapes gets want - len(idle) runners of its own.
func warmShapes(pool *runner.Pool, live, idle []*runner.Instance, want int) [][]string {
	short := want - len(idle)
	if short <= 0 {
		return nil
	}
	if pool.Shapes == nil {
		return make([][]string, short)
	}
	asked := map[string]int{}
	labels := map[string][]string{"": nil}
	for _, inst := range live {
		if inst.Pool != pool.Name || inst.JobID == 0 {
			continue
		}
		if _, err := pool.GrantShape(inst.Labels); err != nil {
			// A shape the policy refuses now: a warm runner of it would
			// be refused at its create, every pass.
			continue
		}
		key, shape := shapeOf(inst.Labels)
		asked[key]++
		labels[key] = shape
	}
	has := map[string]int{}
	for _, inst := range idle {
		key, _ := shapeOf(inst.Labels)
		has[key]++
	}
	parts := warm.Apportion(want, asked)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range parts {
			if !yield(k) {
				return
			}
		}
	})
	var out [][]string
	for _, key := range keys {
		for n := has[key]; n < parts[key] && len(out) < short; n++ {
			out = append(out, labels[key])
		}
	}
	return out
}

// shapeOf is a runner's shape labels and a key that is the same for the
// same shape (as runner.SameShape compares them).
func shapeOf(labels []string) (string, []string) {
	shape := runner.ShapeLabels(labels)
	keys := make([]string, len(shape))
	for i, l := range shape {
		keys[i] = strings.ToLower(l)
	}
	slices.Sort(keys)
	return strings.Join(slices.Compact(keys), "\x00"), shape
}

// stoppedShapes splits a pool's stopped warm machines over the shapes its
// jobs ask for (shapedStopped), from the live instances.
func (e *Engine) stoppedShapes(ctx context.Context, pool *runner.Pool, stopped int) ([]providers.WarmShape, error) {
	live, err := e.store.ListLiveInstances(ctx)
	if err != nil {
		return nil, fmt.Errorf("list live instances: %w", err)
	}
	return shapedStopped(pool, live, stopped), nil
}

// shapedStopped splits stopped machines as warmShapes does hot runners: by
// the jobs holding the pool's live instances, apportioned
// (warm.Apportion), each shape granted under the pool's policy as a create
// would grant it. A shape the policy no longer grants keeps no machine.
// The pool's own shape comes first, always (its count may be 0: the
// provider's warm_pool.size floors it).
func shapedStopped(pool *runner.Pool, live []*runner.Instance, stopped int) []providers.WarmShape {
	asked := map[string]int{}
	example := map[string]*runner.Instance{}
	for _, inst := range live {
		if inst.Pool != pool.Name || inst.JobID == 0 {
			continue
		}
		key, _ := shapeOf(inst.Labels)
		asked[key]++
		example[key] = inst
	}
	parts := warm.Apportion(stopped, asked)
	want := []providers.WarmShape{{Count: parts[""]}}
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range parts {
			if k != "" && !yield(k) {
				return
			}
		}
	}) {
		shape, err := machineShape(pool, example[key])
		if err != nil || shape == nil {
			continue
		}
		want = append(want, providers.WarmShape{Shape: shape, Count: parts[key]})
	}
	return want
}
