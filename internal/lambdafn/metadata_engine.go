package lambdafn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
)

// bootstrapEngine is the engine a booting machine's requests run on, built
// per invocation so its lines name the Lambda request. Bootstrap reads and
// compare-and-sets the machine's instance and credentials and may enqueue a
// delete: it never calls GitHub and never looks a pool up. engine.New still
// wants a GitHub client, and a provider per pool; the function holds
// neither GitHub credentials nor cloud permissions, so it gets noGitHub and
// no pools. (Once the bootstrap methods live on engine.Intake, this becomes
// engine.NewIntake and noGitHub goes.)
func (a *MetadataApp) bootstrapEngine(log *slog.Logger) (*engine.Engine, error) {
	eng, err := engine.New(engine.Options{
		ControllerID: a.Config.ControllerID,
		Store:        a.Store,
		Queue:        a.Queue,
		GitHub:       noGitHub{},
		Logger:       log,
	})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return eng, nil
}

// noGitHub refuses every call: were bootstrap ever to call GitHub, the
// error says why rather than a client with no credentials failing obscurely.
type noGitHub struct{}

var errNoGitHub = errors.New("lambdafn: the metadata function has no GitHub client (it holds no GitHub credentials)")

func (noGitHub) GenerateJITConfig(context.Context, github.JITRequest) (*github.JITConfig, error) {
	return nil, errNoGitHub
}
func (noGitHub) RemoveRunner(context.Context, github.RunnerRef) error { return errNoGitHub }
func (noGitHub) ListRunners(context.Context, github.Owner) ([]github.Runner, error) {
	return nil, errNoGitHub
}
func (noGitHub) RunnerDownloads(context.Context, github.Owner) ([]github.RunnerDownload, error) {
	return nil, errNoGitHub
}
func (noGitHub) GetJob(context.Context, github.JobRef) (*github.Job, error) { return nil, errNoGitHub }
