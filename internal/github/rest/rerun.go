package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// RerunJob re-runs one workflow job of ref.Repository (and the jobs that
// depend on it), authenticated as ref.Owner's installation: one call.
// GitHub answers 403 both for a missing permission ("Resource not
// accessible by integration") and for a run it will not re-run now; the
// first is a *github.PermissionError, the second wraps
// github.ErrRerunRefused, so the engine can tell "fix the App" from
// "already re-run".
func (c *Client) RerunJob(ctx context.Context, ref github.JobRef) error {
	if err := checkOwner(ref.Owner); err != nil {
		return err
	}
	org, repo, err := splitRepository(ref.Repository)
	if err != nil {
		return err
	}
	if ref.ID <= 0 {
		return fmt.Errorf("github: RerunJob needs a job id > 0, got %d", ref.ID)
	}
	inst, err := c.installationFor(ctx, ref.Owner)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, inst, OpRerunJob, ref.Owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		return gh.Actions.RerunJobByID(ctx, org, repo, ref.ID)
	})
	var denied *github.PermissionError
	switch {
	case err == nil:
		return nil
	case statusOf(err) == http.StatusNotFound:
		return fmt.Errorf("%w: job %d in %s: %s", github.ErrJobNotFound, ref.ID, ref.Repository, messageOf(err))
	case errors.As(err, &denied) && !strings.Contains(strings.ToLower(denied.Message), "not accessible"):
		message, _, _ := strings.Cut(denied.Message, " — ")
		return fmt.Errorf("%w: job %d in %s: %s", github.ErrRerunRefused, ref.ID, ref.Repository, message)
	}
	return err
}

// LatestRunAttempt implements github.GitHub: the highest run_attempt among
// the run's jobs of every attempt, one page of 100 (a re-run's attempt
// holds at least the re-run job, and attempts are few).
func (c *Client) LatestRunAttempt(ctx context.Context, ref github.RunRef) (int64, error) {
	if err := checkOwner(ref.Owner); err != nil {
		return 0, err
	}
	org, repo, err := splitRepository(ref.Repository)
	if err != nil {
		return 0, err
	}
	if ref.ID <= 0 {
		return 0, fmt.Errorf("github: LatestRunAttempt needs a run id > 0, got %d", ref.ID)
	}
	inst, err := c.installationFor(ctx, ref.Owner)
	if err != nil {
		return 0, err
	}
	var jobs *gogithub.Jobs
	_, err = c.call(ctx, inst, OpListRunJobs, ref.Owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		var resp *gogithub.Response
		var err error
		jobs, resp, err = gh.Actions.ListWorkflowJobs(ctx, org, repo, ref.ID, &gogithub.ListWorkflowJobsOptions{Filter: "all", ListOptions: gogithub.ListOptions{PerPage: 100}})
		return resp, err
	})
	if statusOf(err) == http.StatusNotFound {
		return 0, fmt.Errorf("%w: run %d in %s: %s", github.ErrJobNotFound, ref.ID, ref.Repository, messageOf(err))
	}
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, j := range jobs.Jobs {
		latest = max(latest, j.GetRunAttempt())
	}
	return latest, nil
}
