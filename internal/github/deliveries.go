package github

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DeliveryLog is GitHub's log of one webhook's deliveries: the App's (GET
// /app/hook/deliveries, authenticated as the App itself with its JWT) or
// an organization's or repository's webhook (GET
// /orgs/{org}/hooks/{hook_id}/deliveries, /repos/{owner}/{repo}/hooks/...,
// with a token or an installation that may read the owner's webhooks). It
// is a port of its own, apart from GitHub, because not every credential
// reaches it: the engine takes one per webhook, optionally, and recovers
// lost deliveries only from those it has. A client without App
// credentials answers the App log's calls with an error matching
// ErrNoDeliveryLog.
type DeliveryLog interface {
	// ListDeliveries reads one page of the log, newest first: from the
	// newest delivery when cursor is "", else from where the previous
	// page's next cursor points. next is "" on the last page. One call per
	// page (1 point of the App's own rate limit).
	ListDeliveries(ctx context.Context, cursor string) (page []Delivery, next string, err error)
	// GetDelivery reads one delivery with the request GitHub sent (its
	// headers and payload): one call. A delivery GitHub no longer keeps
	// returns an error matching ErrDeliveryNotFound.
	GetDelivery(ctx context.Context, id int64) (*Delivery, error)
}

// HookDeliveryLogs is a client that reads organizations' and
// repositories' webhook delivery logs, each with the credential it uses
// for the hook's owner.
type HookDeliveryLogs interface {
	HookDeliveries(h Hook) DeliveryLog
}

// Delivery is one attempt to deliver a webhook, as GitHub's log lists it.
// A redelivery is a new attempt (a new ID) of the same delivery (the same
// GUID, which is the X-GitHub-Delivery header).
type Delivery struct {
	ID          int64
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	// Status is GitHub's text ("OK", "Invalid HTTP Response: 503", ...);
	// StatusCode the HTTP status runfleet answered, 0 when none came back
	// (a timeout, a refused connection).
	Status         string
	StatusCode     int
	Event          string
	Action         string
	InstallationID int64
	// Headers and Payload are the request GitHub sent: set by GetDelivery
	// only. Payload is the JSON body.
	Headers map[string]string
	Payload []byte
}

// Delivered says whether runfleet acknowledged the attempt (a 2xx).
func (d Delivery) Delivered() bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

// ErrNoDeliveryLog: the client cannot read the App's delivery log — it
// authenticates with a token, not as a GitHub App. With a token, the
// organization or repository webhooks that send runfleet its events are
// named in config (github.hooks) and their logs read instead. Matches
// ErrMisconfigured.
var ErrNoDeliveryLog = fmt.Errorf("%w: the App's webhook delivery log needs GitHub App credentials (a token cannot read /app/hook/deliveries; name the organization or repository webhooks in github.hooks)", ErrMisconfigured)

// Hook is an organization's or a repository's webhook (not the App's),
// by the id GitHub shows in its settings URL
// (…/settings/hooks/<id>): Owner is "org" or "org/repo".
type Hook struct {
	Owner Owner
	ID    int64
}

// String is the hook as its REST path names it: "orgs/acme/hooks/7" or
// "repos/acme/app/hooks/7".
func (h Hook) String() string {
	if h.Owner.Repo != "" {
		return fmt.Sprintf("repos/%s/%s/hooks/%d", h.Owner.Org, h.Owner.Repo, h.ID)
	}
	return fmt.Sprintf("orgs/%s/hooks/%d", h.Owner.Org, h.ID)
}

// ParseHook reads a hook as config names it: an owner ("org" or
// "org/repo", never an enterprise: GitHub serves no delivery log for
// enterprise webhooks) and the webhook's id.
func ParseHook(owner string, id int64) (Hook, error) {
	o, err := ParseOwner(owner)
	if err != nil {
		return Hook{}, err
	}
	if o.Enterprise != "" {
		return Hook{}, fmt.Errorf("webhook of %s: GitHub has no delivery log API for enterprise webhooks; use the App's webhook or an organization's", o)
	}
	if id <= 0 {
		return Hook{}, fmt.Errorf("webhook of %s: want its id (the number in its settings URL, …/settings/hooks/<id>), got %d", o, id)
	}
	return Hook{Owner: o, ID: id}, nil
}

// ErrDeliveryNotFound: GitHub does not know the delivery (404), or no
// longer keeps it (older than its retention, 3 days on github.com).
var ErrDeliveryNotFound = errors.New("github: webhook delivery not found")

// EventWorkflowJob is the webhook event (X-GitHub-Event, a delivery's
// Event) runfleet acts on.
const EventWorkflowJob = "workflow_job"
