package rest

import (
	"context"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// RunnerDownloads lists the runner application builds GitHub offers at
// owner: one call, not paginated (GitHub answers with the whole list).
func (c *Client) RunnerDownloads(ctx context.Context, owner github.Owner) ([]github.RunnerDownload, error) {
	if err := checkOwner(owner); err != nil {
		return nil, err
	}
	inst, err := c.installationFor(ctx, owner)
	if err != nil {
		return nil, err
	}
	var apps []*gogithub.RunnerApplicationDownload
	_, err = c.call(ctx, inst, OpListRunnerDownloads, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		var resp *gogithub.Response
		var err error
		apps, resp, err = listRunnerDownloads(ctx, gh, owner)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]github.RunnerDownload, 0, len(apps))
	for _, a := range apps {
		out = append(out, github.RunnerDownload{
			OS:                a.GetOS(),
			Architecture:      a.GetArchitecture(),
			DownloadURL:       a.GetDownloadURL(),
			Filename:          a.GetFilename(),
			SHA256Checksum:    a.GetSHA256Checksum(),
			TempDownloadToken: a.GetTempDownloadToken(),
		})
	}
	return out, nil
}

func listRunnerDownloads(ctx context.Context, gh *gogithub.Client, o github.Owner) ([]*gogithub.RunnerApplicationDownload, *gogithub.Response, error) {
	switch {
	case o.Enterprise != "":
		return gh.Enterprise.ListRunnerApplicationDownloads(ctx, o.Enterprise)
	case o.Repo != "":
		return gh.Actions.ListRunnerApplicationDownloads(ctx, o.Org, o.Repo)
	default:
		return gh.Actions.ListOrganizationRunnerApplicationDownloads(ctx, o.Org)
	}
}
