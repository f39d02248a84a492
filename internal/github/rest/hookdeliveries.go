package rest

import (
	"context"
	"fmt"
	"net/http"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// HookDeliveries is the delivery log of an organization's or a
// repository's webhook (GET /orgs/{org}/hooks/{hook_id}/deliveries, or
// the repository's), read with the credential runfleet uses for the
// hook's owner — the token, or the owner's App installation — and paced
// by that credential's budget. It is how a runfleet that authenticates
// with a token (no App, so no App delivery log) recovers the deliveries
// GitHub failed to make: the token needs admin:org_hook (an organization's
// webhook) or admin:repo_hook (a repository's); an installation, the
// owner's "Webhooks: Read-only" permission.
func (c *Client) HookDeliveries(h github.Hook) github.DeliveryLog {
	return &hookDeliveryLog{c: c, hook: h}
}

var _ github.HookDeliveryLogs = (*Client)(nil)

type hookDeliveryLog struct {
	c    *Client
	hook github.Hook
}

// ListDeliveries implements github.DeliveryLog: 100 per page, GitHub's
// cursor pagination.
func (l *hookDeliveryLog) ListDeliveries(ctx context.Context, cursor string) ([]github.Delivery, string, error) {
	opts := &gogithub.ListCursorOptions{PerPage: pageSize, Cursor: cursor}
	var items []*gogithub.HookDelivery
	resp, err := l.call(ctx, OpListDeliveries, func(ctx context.Context, gh *gogithub.Client, o github.Owner) (resp *gogithub.Response, err error) {
		if o.Repo != "" {
			items, resp, err = gh.Repositories.ListHookDeliveries(ctx, o.Org, o.Repo, l.hook.ID, opts)
		} else {
			items, resp, err = gh.Organizations.ListHookDeliveries(ctx, o.Org, l.hook.ID, opts)
		}
		return resp, err
	})
	if statusOf(err) == http.StatusNotFound {
		return nil, "", fmt.Errorf("%w: webhook %s: GitHub does not show it (check its id in github.hooks, and that the credential may read %s's webhooks): %v",
			github.ErrMisconfigured, l.hook, l.hook.Owner, err)
	}
	if err != nil {
		return nil, "", err
	}
	page := make([]github.Delivery, 0, len(items))
	for _, d := range items {
		page = append(page, deliveryOf(d))
	}
	return page, resp.Cursor, nil
}

// GetDelivery implements github.DeliveryLog, with the request GitHub sent.
func (l *hookDeliveryLog) GetDelivery(ctx context.Context, id int64) (*github.Delivery, error) {
	var d *gogithub.HookDelivery
	_, err := l.call(ctx, OpGetDelivery, func(ctx context.Context, gh *gogithub.Client, o github.Owner) (resp *gogithub.Response, err error) {
		if o.Repo != "" {
			d, resp, err = gh.Repositories.GetHookDelivery(ctx, o.Org, o.Repo, l.hook.ID, id)
		} else {
			d, resp, err = gh.Organizations.GetHookDelivery(ctx, o.Org, l.hook.ID, id)
		}
		return resp, err
	})
	if statusOf(err) == http.StatusNotFound {
		return nil, fmt.Errorf("%w: delivery %d of webhook %s: %v", github.ErrDeliveryNotFound, id, l.hook, err)
	}
	if err != nil {
		return nil, err
	}
	return deliveryWithRequest(d), nil
}

// call makes one request as the hook owner's credential, through its
// budget, its error classified as every other call's.
func (l *hookDeliveryLog) call(ctx context.Context, op string, fn func(context.Context, *gogithub.Client, github.Owner) (*gogithub.Response, error)) (*gogithub.Response, error) {
	o := l.hook.Owner
	inst, err := l.c.installationFor(ctx, o)
	if err != nil {
		return nil, err
	}
	return l.c.call(ctx, inst, op, o, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		return fn(ctx, gh, o)
	})
}
