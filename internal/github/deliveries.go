package github

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DeliveryLog is GitHub's log of the App's webhook deliveries (GET
// /app/hook/deliveries, authenticated as the App itself with its JWT). It
// is a port of its own, apart from GitHub, because only App credentials
// reach it: the engine takes it optionally and recovers lost deliveries
// only when it has one. A client without App credentials answers every
// call with an error matching ErrNoDeliveryLog.
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
// authenticates with a token, not as a GitHub App. Lost webhook
// deliveries are then not recovered; an administrator redelivers them by
// hand. Matches ErrMisconfigured.
var ErrNoDeliveryLog = fmt.Errorf("%w: the webhook delivery log needs GitHub App credentials (a token cannot read /app/hook/deliveries)", ErrMisconfigured)

// ErrDeliveryNotFound: GitHub does not know the delivery (404), or no
// longer keeps it (older than its retention, 3 days on github.com).
var ErrDeliveryNotFound = errors.New("github: webhook delivery not found")

// EventWorkflowJob is the webhook event (X-GitHub-Event, a delivery's
// Event) runfleet acts on.
const EventWorkflowJob = "workflow_job"
