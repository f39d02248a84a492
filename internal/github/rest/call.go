package rest

import (
	"context"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// pageSize is GitHub's largest page: the fewest calls per listing.
const pageSize = 100

// call makes one request through the installation, labelled for the
// counters, and classifies its error (see classify). Its requests wait for
// the installation's budget in the pacer, which also refuses them while a
// rate limit GitHub reported lasts. GitHub refusing the installation (its
// token, or a suspension) sets it aside (setaside.go); an answer to a
// call ends that.
func (c *Client) call(ctx context.Context, inst *installation, op string, owner github.Owner, fn func(context.Context, *gogithub.Client) (*gogithub.Response, error)) (*gogithub.Response, error) {
	resp, err := fn(withOp(ctx, op), inst.gh)
	if err != nil {
		classified := classify(ctx, inst.calls, inst.mints, c.now(), op, owner, err)
		if c.key != nil && installationRefused(err, classified) {
			return resp, c.putAside(installationAsideKey(inst.id), refused, owner, inst.id, classified)
		}
		return resp, classified
	}
	if c.key != nil {
		c.clearAside(installationAsideKey(inst.id))
	}
	return resp, nil
}

// nextPage says which page to read after page, given one answer: GitHub's
// Link header when it sends one, else total_count.
func nextPage(resp *gogithub.Response, page, got, seen, total int) (int, bool) {
	if resp != nil && resp.NextPage > page {
		return resp.NextPage, true
	}
	if resp != nil && resp.Header.Get("Link") != "" {
		return 0, false // Link without rel="next": the last page
	}
	if got > 0 && seen < total {
		return page + 1, true
	}
	return 0, false
}
