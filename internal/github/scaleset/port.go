package scaleset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/runfleet/runfleet/internal/github"
)

// Runners registers and removes one scale set's runners for the engine: a
// runner that is to take the scale set's jobs must be registered through
// the scale set (GitHub gives its jobs to its own runners only), not
// through the REST JIT endpoint. The scale set is found by name in its
// runner group, once, and again after GitHub deleted it.
type Runners struct {
	Client *Client
	// Group and Name find the scale set ("" group: the default).
	Group, Name string

	mu sync.Mutex
	id int64 // the scale set's id, 0 until looked up
}

// scaleSetID is the scale set's id, looked up on first use.
func (r *Runners) scaleSetID(ctx context.Context) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id != 0 {
		return r.id, nil
	}
	group := r.Group
	if group == "" {
		group = DefaultRunnerGroup
	}
	g, err := r.Client.RunnerGroupByName(ctx, group)
	if err != nil {
		return 0, err
	}
	set, err := r.Client.ScaleSetByName(ctx, g.ID, r.Name)
	if err != nil {
		return 0, err
	}
	if set == nil {
		// The listener ensures the scale set before it takes a job; none
		// yet means no job of it can be waiting for this runner.
		return 0, &Error{Op: "find scale set " + r.Name, Kind: ErrScaleSetNotFound}
	}
	r.id = set.ID
	return r.id, nil
}

// forget drops the cached id after GitHub said the scale set is gone.
func (r *Runners) forget(err error) {
	if errors.Is(err, ErrScaleSetNotFound) {
		r.mu.Lock()
		r.id = 0
		r.mu.Unlock()
	}
}

// GenerateJITConfig registers req.Name in the scale set. A name already
// taken is the runner an earlier attempt registered (the engine names a
// runner once per attempt): it is removed if idle and the call made once
// more, as the REST client does; a busy holder is github.ErrRunnerNameTaken.
func (r *Runners) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	id, err := r.scaleSetID(ctx)
	if err != nil {
		return nil, err
	}
	jit, err := r.Client.GenerateJITConfig(ctx, id, req.Name, req.WorkFolder)
	if errors.Is(err, ErrRunnerExists) {
		if err := r.RemoveRunner(ctx, github.RunnerRef{Owner: req.Owner, Name: req.Name, Pool: req.Pool}); err != nil {
			return nil, fmt.Errorf("%w: %q in scale set %s: %w", github.ErrRunnerNameTaken, req.Name, r.Name, err)
		}
		jit, err = r.Client.GenerateJITConfig(ctx, id, req.Name, req.WorkFolder)
	}
	if err != nil {
		r.forget(err)
		return nil, err
	}
	return &github.JITConfig{RunnerID: jit.Runner.ID, EncodedJITConfig: jit.EncodedJITConfig}, nil
}

// RemoveRunner deregisters a runner through the Actions service: by id,
// else by name. Gone is success; a runner running a job is
// github.ErrRunnerBusy (the busy guard: its machine is kept).
func (r *Runners) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	id := ref.ID
	if id == 0 {
		if ref.Name == "" {
			return errors.New("scaleset: a runner to remove needs an id or a name")
		}
		found, err := r.Client.RunnerByName(ctx, ref.Name)
		if errors.Is(err, ErrRunnerNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		id = found.ID
	}
	err := r.Client.RemoveRunner(ctx, id)
	if errors.Is(err, ErrRunnerNotFound) {
		return nil
	}
	return err
}

// PoolRunners registers and removes one scale-set pool's runners:
// *Runners, or the fault simulation's scale sets.
type PoolRunners interface {
	GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error)
	RemoveRunner(ctx context.Context, ref github.RunnerRef) error
}

var _ PoolRunners = (*Runners)(nil)

// RoutedGitHub is the engine's GitHub port with the runners of some pools
// registered and removed through their scale sets; everything else, and
// every other pool, goes to the REST port it wraps.
type RoutedGitHub struct {
	github.GitHub
	// ByPool holds the scale-set pools' runners, by pool name.
	ByPool map[string]PoolRunners
}

// GenerateJITConfig routes by req.Pool.
func (g RoutedGitHub) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	if r := g.ByPool[req.Pool]; r != nil && req.Pool != "" {
		return r.GenerateJITConfig(ctx, req)
	}
	return g.GitHub.GenerateJITConfig(ctx, req)
}

// RemoveRunner routes by ref.Pool; a runner of unknown pool (an orphan
// found by listing) is removed through REST, as before scale sets.
func (g RoutedGitHub) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	if r := g.ByPool[ref.Pool]; r != nil && ref.Pool != "" {
		return r.RemoveRunner(ctx, ref)
	}
	return g.GitHub.RemoveRunner(ctx, ref)
}
