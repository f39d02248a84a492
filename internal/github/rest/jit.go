package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// maxLabels is GitHub's limit on a JIT runner's labels.
const maxLabels = 100

// GenerateJITConfig registers a just-in-time runner named req.Name in the
// pool's runner group (resolved by name, cached) and returns its id and
// encoded configuration. A name already taken (409) by an idle runner of
// ours — typically one GitHub registered although an earlier attempt
// answered with an error — is removed and the call retried once; any other
// 409 returns an error wrapping github.ErrRunnerNameTaken.
func (c *Client) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	if err := checkOwner(req.Owner); err != nil {
		return nil, err
	}
	switch {
	case req.Name == "":
		return nil, errors.New("github: a JIT runner needs a name")
	case len(req.Labels) == 0 || len(req.Labels) > maxLabels:
		return nil, fmt.Errorf("github: a JIT runner needs 1–%d labels, got %d", maxLabels, len(req.Labels))
	}
	inst, err := c.installationFor(ctx, req.Owner)
	if err != nil {
		return nil, err
	}
	groupID, err := c.runnerGroupID(ctx, inst, req.Owner, req.RunnerGroup)
	if err != nil {
		return nil, err
	}
	body := &gogithub.GenerateJITConfigRequest{
		Name:          req.Name,
		RunnerGroupID: groupID,
		Labels:        slices.Clone(req.Labels), // never nil: GitHub requires the field
	}
	if req.WorkFolder != "" {
		body.WorkFolder = gogithub.String(req.WorkFolder)
	}
	cfg, err := c.generateJIT(ctx, inst, req, body)
	if statusOf(err) == http.StatusConflict {
		if err := c.clearStaleRunner(ctx, inst, req); err != nil {
			return nil, err
		}
		cfg, err = c.generateJIT(ctx, inst, req, body)
		if statusOf(err) == http.StatusConflict {
			return nil, fmt.Errorf("%w: %q at %s is still taken after removing the stale runner: %v", github.ErrRunnerNameTaken, req.Name, req.Owner, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if cfg.GetRunner().GetID() == 0 || cfg.GetEncodedJITConfig() == "" {
		return nil, fmt.Errorf("github: JIT config for %q at %s: the answer has no runner id or no config", req.Name, req.Owner)
	}
	return &github.JITConfig{RunnerID: cfg.GetRunner().GetID(), EncodedJITConfig: cfg.GetEncodedJITConfig()}, nil
}

func (c *Client) generateJIT(ctx context.Context, inst *installation, req github.JITRequest, body *gogithub.GenerateJITConfigRequest) (*gogithub.JITRunnerConfig, error) {
	var cfg *gogithub.JITRunnerConfig
	_, err := c.call(ctx, inst, OpGenerateJITConfig, req.Owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		var resp *gogithub.Response
		var err error
		cfg, resp, err = generateJIT(ctx, gh, req.Owner, body)
		return resp, err
	})
	if s := statusOf(err); s == http.StatusNotFound || s == http.StatusUnprocessableEntity {
		// Perhaps the cached runner group is gone; look it up next time.
		c.forgetRunnerGroup(req.Owner, req.RunnerGroup)
	}
	return cfg, err
}

// clearStaleRunner removes the runner holding req.Name so the name can be
// registered again — only if it is ours and idle. A runner that is gone by
// now is fine too.
func (c *Client) clearStaleRunner(ctx context.Context, inst *installation, req github.JITRequest) error {
	stale, err := c.findRunner(ctx, inst, req.Owner, req.Name)
	if err != nil {
		return fmt.Errorf("runner name %q taken at %s; looking it up: %w", req.Name, req.Owner, err)
	}
	if stale == nil {
		return nil
	}
	if !ours(*stale, req.Labels) {
		return fmt.Errorf("%w: %q at %s is held by a runner this runfleet controller did not register (id %d); not touching it", github.ErrRunnerNameTaken, req.Name, req.Owner, stale.ID)
	}
	if stale.Busy {
		return fmt.Errorf("%w: %q at %s is a runner of ours that is running a job (id %d)", github.ErrRunnerNameTaken, req.Name, req.Owner, stale.ID)
	}
	if err := c.removeByID(ctx, inst, req.Owner, stale.ID, stale.Name); err != nil {
		return fmt.Errorf("%w: removing the stale runner %q (id %d) at %s: %w", github.ErrRunnerNameTaken, req.Name, stale.ID, req.Owner, err)
	}
	c.log.Info("removed a stale runner of ours that held the name of a new JIT runner",
		"runner", stale.Name, "github_runner_id", stale.ID, "owner", req.Owner.String(), "status", stale.Status)
	return nil
}

// ours: a runner registered by the controller that registers the new one
// (its controller label, runner.ControllerIDOf), by runfleet's one
// ownership rule; a stale runner of another controller is not ours to
// remove.
func ours(r github.Runner, newLabels []string) bool {
	return runner.RegisteredBy(runner.ControllerIDOf(newLabels), r.Name, r.Labels)
}
