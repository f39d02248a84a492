package rest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// defaultRunnerGroupID is the "Default" group every organization and
// enterprise has; repository runners always belong to it.
const defaultRunnerGroupID = 1

// ErrRunnerGroupNotFound: a pool names a runner group the owner does not
// have (or the App cannot see).
var ErrRunnerGroupNotFound = fmt.Errorf("%w: runner group not found", github.ErrMisconfigured)

type groupKey struct{ owner, name string }

// runnerGroupID resolves a pool's runner group name to its id. Names are
// looked up once per owner and process: the first miss lists all of the
// owner's groups and caches every one of them.
func (c *Client) runnerGroupID(ctx context.Context, inst *installation, owner github.Owner, name string) (int64, error) {
	name = strings.TrimSpace(name)
	if owner.Repo != "" || name == "" || strings.EqualFold(name, "default") {
		return defaultRunnerGroupID, nil
	}
	ownerKey := strings.ToLower(owner.String())
	key := groupKey{ownerKey, strings.ToLower(name)}
	c.mu.Lock()
	id, ok := c.groups[key]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	groups, err := c.allRunnerGroups(ctx, inst, owner)
	if err != nil {
		return 0, fmt.Errorf("resolve runner group %q: %w", name, err)
	}
	c.mu.Lock()
	for _, g := range groups {
		c.groups[groupKey{ownerKey, strings.ToLower(g.name)}] = g.id
	}
	id, ok = c.groups[key]
	c.mu.Unlock()
	if !ok {
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = fmt.Sprintf("%q", g.name)
		}
		sort.Strings(names)
		return 0, fmt.Errorf("%w: %q at %s (it has %s)", ErrRunnerGroupNotFound, name, owner, strings.Join(names, ", "))
	}
	return id, nil
}

// forgetRunnerGroup drops a cached id GitHub has just refused (the group
// was deleted or recreated), so the next attempt looks it up again.
func (c *Client) forgetRunnerGroup(owner github.Owner, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groups, groupKey{strings.ToLower(owner.String()), strings.ToLower(strings.TrimSpace(name))})
}

func (c *Client) allRunnerGroups(ctx context.Context, inst *installation, owner github.Owner) ([]namedGroup, error) {
	var all []namedGroup
	page := 1
	for {
		var groups []namedGroup
		var total int
		resp, err := c.call(ctx, inst, OpListRunnerGroups, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
			var resp *gogithub.Response
			var err error
			groups, total, resp, err = listRunnerGroups(ctx, gh, owner, gogithub.ListOptions{Page: page, PerPage: pageSize})
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, groups...)
		next, more := nextPage(resp, page, len(groups), len(all), total)
		if !more {
			return all, nil
		}
		page = next
	}
}
