package spread

import (
	"context"
	"net/http"

	"github.com/runfleet/runfleet/internal/github"
)

// GenerateJITConfig registers the runner through the App that can go
// soonest (or whose budget gave the create its turn).
func (g *GitHub) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	return call(ctx, g, "generate_jit_config", req.Owner, http.MethodPost, func(a App, o github.Owner) (*github.JITConfig, error) {
		r := req
		r.Owner = o
		return a.GenerateJITConfig(ctx, r)
	})
}

// RemoveRunner removes a runner through any App installed on its owner:
// runners belong to the owner, not to the App that registered them, and
// any installation with the self-hosted runners permission may remove one.
func (g *GitHub) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	_, err := call(ctx, g, "remove_runner", ref.Owner, http.MethodDelete, func(a App, o github.Owner) (struct{}, error) {
		r := ref
		r.Owner = o
		return struct{}{}, a.RemoveRunner(ctx, r)
	})
	return err
}

// ListRunners lists the owner's runners (all of them, whichever App
// registered each).
func (g *GitHub) ListRunners(ctx context.Context, owner github.Owner) ([]github.Runner, error) {
	return call(ctx, g, "list_runners", owner, http.MethodGet, func(a App, o github.Owner) ([]github.Runner, error) {
		return a.ListRunners(ctx, o)
	})
}

// RunnerDownloads lists the runner builds GitHub offers the owner.
func (g *GitHub) RunnerDownloads(ctx context.Context, owner github.Owner) ([]github.RunnerDownload, error) {
	return call(ctx, g, "runner_downloads", owner, http.MethodGet, func(a App, o github.Owner) ([]github.RunnerDownload, error) {
		return a.RunnerDownloads(ctx, o)
	})
}

// GetJob reads a workflow job.
func (g *GitHub) GetJob(ctx context.Context, ref github.JobRef) (*github.Job, error) {
	return call(ctx, g, "get_job", ref.Owner, http.MethodGet, func(a App, o github.Owner) (*github.Job, error) {
		r := ref
		r.Owner = o
		return a.GetJob(ctx, r)
	})
}

// RerunJob re-runs a workflow job.
func (g *GitHub) RerunJob(ctx context.Context, ref github.JobRef) error {
	_, err := call(ctx, g, "rerun_job", ref.Owner, http.MethodPost, func(a App, o github.Owner) (struct{}, error) {
		r := ref
		r.Owner = o
		return struct{}{}, a.RerunJob(ctx, r)
	})
	return err
}

// RunJobs lists a workflow run's jobs of every attempt.
func (g *GitHub) RunJobs(ctx context.Context, ref github.RunRef) ([]github.Job, error) {
	return call(ctx, g, "run_jobs", ref.Owner, http.MethodGet, func(a App, o github.Owner) ([]github.Job, error) {
		r := ref
		r.Owner = o
		return a.RunJobs(ctx, r)
	})
}
