package lambdafn

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/github"
)

// unusedGitHub stands in for GitHub in the webhook function, which only
// records and enqueues: were the engine ever to call GitHub from intake,
// the error says so rather than acting on a client with no credentials.
type unusedGitHub struct{}

var errNoGitHubInIntake = errors.New("lambdafn: the webhook function has no GitHub client (it holds no GitHub credentials)")

func (unusedGitHub) GenerateJITConfig(context.Context, github.JITRequest) (*github.JITConfig, error) {
	return nil, errNoGitHubInIntake
}

func (unusedGitHub) RemoveRunner(context.Context, github.RunnerRef) error { return errNoGitHubInIntake }

func (unusedGitHub) ListRunners(context.Context, github.Owner) ([]github.Runner, error) {
	return nil, errNoGitHubInIntake
}

func (unusedGitHub) RunnerDownloads(context.Context, github.Owner) ([]github.RunnerDownload, error) {
	return nil, errNoGitHubInIntake
}
