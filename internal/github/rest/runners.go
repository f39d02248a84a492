package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// ListRunners returns every runner registered at owner, reading all pages
// (100 runners per call).
func (c *Client) ListRunners(ctx context.Context, owner github.Owner) ([]github.Runner, error) {
	if err := checkOwner(owner); err != nil {
		return nil, err
	}
	inst, err := c.installationFor(ctx, owner)
	if err != nil {
		return nil, err
	}
	var out []github.Runner
	err = c.eachRunner(ctx, inst, owner, func(r *gogithub.Runner) bool {
		out = append(out, toRunner(r))
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachRunner hands visit the owner's runners, page by page, until visit
// returns false or the pages end.
func (c *Client) eachRunner(ctx context.Context, inst *installation, owner github.Owner, visit func(*gogithub.Runner) bool) error {
	page, seen := 1, 0
	for {
		var runners *gogithub.Runners
		resp, err := c.call(ctx, inst, OpListRunners, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
			var resp *gogithub.Response
			var err error
			runners, resp, err = listRunners(ctx, gh, owner, &gogithub.ListOptions{Page: page, PerPage: pageSize})
			return resp, err
		})
		if err != nil {
			return err
		}
		for _, r := range runners.Runners {
			if !visit(r) {
				return nil
			}
		}
		seen += len(runners.Runners)
		next, more := nextPage(resp, page, len(runners.Runners), seen, runners.TotalCount)
		if !more {
			return nil
		}
		page = next
	}
}

// findRunner looks a runner up by name; nil when there is none. It asks
// GitHub to filter by name (the list endpoints' `name` parameter, which
// go-github v57 does not expose): one call. A server that ignores the
// filter (an older GHES) answers with other runners too; then every page is
// read and compared here.
func (c *Client) findRunner(ctx context.Context, inst *installation, owner github.Owner, name string) (*github.Runner, error) {
	var runners *gogithub.Runners
	_, err := c.call(ctx, inst, OpListRunners, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		req, err := gh.NewRequest(http.MethodGet, runnersPath(owner)+"?name="+url.QueryEscape(name)+"&per_page="+strconv.Itoa(pageSize), nil)
		if err != nil {
			return nil, err
		}
		runners = new(gogithub.Runners)
		return gh.Do(ctx, req, runners)
	})
	if err != nil {
		return nil, err
	}
	filtered := true
	var found *github.Runner
	for _, r := range runners.Runners {
		if !strings.EqualFold(r.GetName(), name) {
			filtered = false
			continue
		}
		gr := toRunner(r)
		found = &gr
	}
	if found != nil || filtered {
		return found, nil
	}
	err = c.eachRunner(ctx, inst, owner, func(r *gogithub.Runner) bool {
		if strings.EqualFold(r.GetName(), name) {
			gr := toRunner(r)
			found = &gr
			return false
		}
		return true
	})
	return found, err
}

func toRunner(r *gogithub.Runner) github.Runner {
	out := github.Runner{ID: r.GetID(), Name: r.GetName(), Status: r.GetStatus(), Busy: r.GetBusy()}
	for _, l := range r.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// RemoveRunner deregisters a runner, by id or — when the id is 0 — by name
// (one listing). Removed (204) and not found (404: a JIT runner removes
// itself after its job) are nil; 422 wraps github.ErrRunnerBusy.
func (c *Client) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	if err := checkOwner(ref.Owner); err != nil {
		return err
	}
	if ref.ID == 0 && ref.Name == "" {
		return errors.New("github: RemoveRunner needs a runner id or name")
	}
	inst, err := c.installationFor(ctx, ref.Owner)
	if err != nil {
		return err
	}
	id := ref.ID
	if id == 0 {
		r, err := c.findRunner(ctx, inst, ref.Owner, ref.Name)
		if err != nil {
			return fmt.Errorf("look up runner %q: %w", ref.Name, err)
		}
		if r == nil {
			return nil
		}
		id = r.ID
	}
	return c.removeByID(ctx, inst, ref.Owner, id, ref.Name)
}

func (c *Client) removeByID(ctx context.Context, inst *installation, owner github.Owner, id int64, name string) error {
	_, err := c.call(ctx, inst, OpRemoveRunner, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		return removeRunner(ctx, gh, owner, id)
	})
	switch statusOf(err) {
	case http.StatusNotFound:
		return nil
	case http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: runner %q (id %d) at %s: %s", github.ErrRunnerBusy, name, id, owner, messageOf(err))
	}
	return err
}
