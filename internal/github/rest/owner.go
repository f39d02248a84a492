package rest

import (
	"context"
	"errors"
	"net/url"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// The REST endpoints differ by where runners register; these pick the one
// for an owner.

func checkOwner(o github.Owner) error {
	if o.Org == "" && o.Enterprise == "" {
		return errors.New("github: runner owner is empty (want an organization, a repository or an enterprise)")
	}
	return nil
}

func generateJIT(ctx context.Context, gh *gogithub.Client, o github.Owner, req *gogithub.GenerateJITConfigRequest) (*gogithub.JITRunnerConfig, *gogithub.Response, error) {
	switch {
	case o.Enterprise != "":
		return gh.Enterprise.GenerateEnterpriseJITConfig(ctx, o.Enterprise, req)
	case o.Repo != "":
		return gh.Actions.GenerateRepoJITConfig(ctx, o.Org, o.Repo, req)
	default:
		return gh.Actions.GenerateOrgJITConfig(ctx, o.Org, req)
	}
}

func removeRunner(ctx context.Context, gh *gogithub.Client, o github.Owner, id int64) (*gogithub.Response, error) {
	switch {
	case o.Enterprise != "":
		return gh.Enterprise.RemoveRunner(ctx, o.Enterprise, id)
	case o.Repo != "":
		return gh.Actions.RemoveRunner(ctx, o.Org, o.Repo, id)
	default:
		return gh.Actions.RemoveOrganizationRunner(ctx, o.Org, id)
	}
}

func listRunners(ctx context.Context, gh *gogithub.Client, o github.Owner, page *gogithub.ListOptions) (*gogithub.Runners, *gogithub.Response, error) {
	switch {
	case o.Enterprise != "":
		return gh.Enterprise.ListRunners(ctx, o.Enterprise, page)
	case o.Repo != "":
		return gh.Actions.ListRunners(ctx, o.Org, o.Repo, page)
	default:
		return gh.Actions.ListOrganizationRunners(ctx, o.Org, page)
	}
}

// runnersPath is the list-runners path, relative to the API root.
func runnersPath(o github.Owner) string {
	switch {
	case o.Enterprise != "":
		return "enterprises/" + url.PathEscape(o.Enterprise) + "/actions/runners"
	case o.Repo != "":
		return "repos/" + url.PathEscape(o.Org) + "/" + url.PathEscape(o.Repo) + "/actions/runners"
	default:
		return "orgs/" + url.PathEscape(o.Org) + "/actions/runners"
	}
}

// namedGroup is a runner group's id and name, whichever kind listed it.
type namedGroup struct {
	id   int64
	name string
}

// listRunnerGroups lists one page of an organization's or enterprise's
// runner groups (repositories have none).
func listRunnerGroups(ctx context.Context, gh *gogithub.Client, o github.Owner, page gogithub.ListOptions) ([]namedGroup, int, *gogithub.Response, error) {
	var out []namedGroup
	if o.Enterprise != "" {
		groups, resp, err := gh.Enterprise.ListRunnerGroups(ctx, o.Enterprise, &gogithub.ListEnterpriseRunnerGroupOptions{ListOptions: page})
		if err != nil {
			return nil, 0, resp, err
		}
		for _, g := range groups.RunnerGroups {
			out = append(out, namedGroup{id: g.GetID(), name: g.GetName()})
		}
		return out, groups.GetTotalCount(), resp, nil
	}
	groups, resp, err := gh.Actions.ListOrganizationRunnerGroups(ctx, o.Org, &gogithub.ListOrgRunnerGroupOptions{ListOptions: page})
	if err != nil {
		return nil, 0, resp, err
	}
	for _, g := range groups.RunnerGroups {
		out = append(out, namedGroup{id: g.GetID(), name: g.GetName()})
	}
	return out, groups.TotalCount, resp, nil
}
