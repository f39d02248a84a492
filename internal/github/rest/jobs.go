package rest

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// GetJob reads one workflow job of ref.Repository, authenticated as
// ref.Owner's installation: one call. A job GitHub does not know (404)
// wraps github.ErrJobNotFound; rate limits and permissions come back as the
// other calls' do (classify).
func (c *Client) GetJob(ctx context.Context, ref github.JobRef) (*github.Job, error) {
	if err := checkOwner(ref.Owner); err != nil {
		return nil, err
	}
	org, repo, err := splitRepository(ref.Repository)
	if err != nil {
		return nil, err
	}
	if ref.ID <= 0 {
		return nil, fmt.Errorf("github: GetJob needs a job id > 0, got %d", ref.ID)
	}
	inst, err := c.installationFor(ctx, ref.Owner)
	if err != nil {
		return nil, err
	}
	var job *gogithub.WorkflowJob
	_, err = c.call(ctx, inst, OpGetJob, ref.Owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		var resp *gogithub.Response
		var err error
		job, resp, err = gh.Actions.GetWorkflowJobByID(ctx, org, repo, ref.ID)
		return resp, err
	})
	if statusOf(err) == http.StatusNotFound {
		// GitHub answers 404 alike for a job it never had, a job of
		// another repository and a repository the installation cannot
		// see: in each case this installation cannot learn the job's fate.
		return nil, fmt.Errorf("%w: job %d in %s: %s", github.ErrJobNotFound, ref.ID, ref.Repository, messageOf(err))
	}
	if err != nil {
		return nil, err
	}
	j := jobOf(job)
	return &j, nil
}

// jobOf is GitHub's workflow job in the port's words.
func jobOf(job *gogithub.WorkflowJob) github.Job {
	return github.Job{
		ID:         job.GetID(),
		RunAttempt: job.GetRunAttempt(),
		Status:     job.GetStatus(),
		Conclusion: job.GetConclusion(),
		RunnerName: job.GetRunnerName(),
	}
}

// splitRepository reads "org/repo", the form webhooks carry in
// repository.full_name. go-github puts both parts in the path unescaped, so
// only the characters GitHub allows in logins and repository names pass:
// anything else could name another endpoint.
func splitRepository(full string) (org, repo string, err error) {
	org, repo, ok := strings.Cut(full, "/")
	if !ok || !isGitHubName(org) || !isGitHubName(repo) {
		return "", "", fmt.Errorf("github: a job's repository must be \"org/repo\", got %q", full)
	}
	return org, repo, nil
}

func isGitHubName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}
