package rest

import (
	"context"
	"fmt"
	"net/http"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

var _ github.DeliveryLog = (*Client)(nil)

// ListDeliveries implements github.DeliveryLog: GET /app/hook/deliveries
// as the App (its JWT; no installation permission is involved), 100 per
// page, GitHub's cursor pagination. With a token it returns
// github.ErrNoDeliveryLog without a call: a token reads the organization
// and repository webhooks' logs instead (HookDeliveries).
func (c *Client) ListDeliveries(ctx context.Context, cursor string) ([]github.Delivery, string, error) {
	gh, err := c.deliveryLogClient()
	if err != nil {
		return nil, "", err
	}
	opts := &gogithub.ListCursorOptions{PerPage: pageSize, Cursor: cursor}
	items, resp, err := gh.Apps.ListHookDeliveries(withOp(ctx, OpListDeliveries), opts)
	if err != nil {
		return nil, "", c.deliveryError(ctx, OpListDeliveries, err)
	}
	page := make([]github.Delivery, 0, len(items))
	for _, d := range items {
		page = append(page, deliveryOf(d))
	}
	return page, resp.Cursor, nil
}

// GetDelivery implements github.DeliveryLog: GET
// /app/hook/deliveries/{delivery_id}, with the request GitHub sent.
func (c *Client) GetDelivery(ctx context.Context, id int64) (*github.Delivery, error) {
	gh, err := c.deliveryLogClient()
	if err != nil {
		return nil, err
	}
	d, _, err := gh.Apps.GetHookDelivery(withOp(ctx, OpGetDelivery), id)
	if statusOf(err) == http.StatusNotFound {
		return nil, fmt.Errorf("%w: delivery %d: %s", github.ErrDeliveryNotFound, id, messageOf(err))
	}
	if err != nil {
		return nil, c.deliveryError(ctx, OpGetDelivery, err)
	}
	return deliveryWithRequest(d), nil
}

// deliveryWithRequest is one delivery with the request GitHub sent.
func deliveryWithRequest(d *gogithub.HookDelivery) *github.Delivery {
	out := deliveryOf(d)
	if req := d.GetRequest(); req != nil {
		out.Headers = req.Headers
		if req.RawPayload != nil {
			out.Payload = []byte(*req.RawPayload)
		}
	}
	return &out
}

// deliveryLogClient is the App's own client, or ErrNoDeliveryLog with a
// token.
func (c *Client) deliveryLogClient() (*gogithub.Client, error) {
	if c.key == nil {
		return nil, github.ErrNoDeliveryLog
	}
	return c.appGitHub()
}

// deliveryError classifies an answer of the delivery log: rate limits
// (the App's own budget) as *github.RateLimitError, everything else
// wrapped with the operation.
func (c *Client) deliveryError(ctx context.Context, op string, err error) error {
	if rl := rateLimitOf(ctx, c.appBudget(), nil, c.now(), err); rl != nil {
		return rl
	}
	if statusOf(err) == http.StatusUnauthorized {
		return fmt.Errorf("github: %s: GitHub refused the App's JWT (check github.app.id and the private key): %w", op, err)
	}
	return fmt.Errorf("github: %s: %w", op, err)
}

func deliveryOf(d *gogithub.HookDelivery) github.Delivery {
	return github.Delivery{
		ID:             d.GetID(),
		GUID:           d.GetGUID(),
		DeliveredAt:    d.GetDeliveredAt().Time,
		Redelivery:     d.GetRedelivery(),
		Status:         d.GetStatus(),
		StatusCode:     d.GetStatusCode(),
		Event:          d.GetEvent(),
		Action:         d.GetAction(),
		InstallationID: d.GetInstallationID(),
	}
}
