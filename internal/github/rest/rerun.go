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

// runJobsPages bounds RunJobs: a run's jobs of every attempt, 100 a page.
// A run has at most 256 jobs per attempt (GitHub's matrix limit) and
// attempts are few; a run past this many pages is read in part.
const runJobsPages = 10

// RunJobs implements github.GitHub: the run's jobs of every attempt.
func (c *Client) RunJobs(ctx context.Context, ref github.RunRef) ([]github.Job, error) {
	if err := checkOwner(ref.Owner); err != nil {
		return nil, err
	}
	org, repo, err := splitRepository(ref.Repository)
	if err != nil {
		return nil, err
	}
	if ref.ID <= 0 {
		return nil, fmt.Errorf("github: RunJobs needs a run id > 0, got %d", ref.ID)
	}
	inst, err := c.installationFor(ctx, ref.Owner)
	if err != nil {
		return nil, err
	}
	var out []github.Job
	for page := 1; page <= runJobsPages; page++ {
		var (
			jobs *gogithub.Jobs
			next int
		)
		_, err = c.call(ctx, inst, OpListRunJobs, ref.Owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
			opts := &gogithub.ListWorkflowJobsOptions{Filter: "all", ListOptions: gogithub.ListOptions{PerPage: 100, Page: page}}
			var resp *gogithub.Response
			var err error
			jobs, resp, err = gh.Actions.ListWorkflowJobs(ctx, org, repo, ref.ID, opts)
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if statusOf(err) == http.StatusNotFound {
			return nil, fmt.Errorf("%w: run %d in %s: %s", github.ErrJobNotFound, ref.ID, ref.Repository, messageOf(err))
		}
		if err != nil {
			return nil, err
		}
		for _, j := range jobs.Jobs {
			out = append(out, jobOf(j))
		}
		if next == 0 {
			break
		}
	}
	return out, nil
}
