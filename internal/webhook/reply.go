package webhook

import (
	"encoding/json"

	"github.com/runfleet/runfleet/internal/engine"
)

// ContentType is the media type of every Response body.
const ContentType = "application/json"

// Reply statuses.
const (
	StatusProcessed = "processed" // the engine handled the workflow_job; outcome fields say how
	StatusPong      = "pong"      // answer to GitHub's ping event
	StatusIgnored   = "ignored"   // an event runfleet does not act on
	StatusRejected  = "rejected"  // bad input (4xx); nothing was changed
	StatusFailed    = "failed"    // runfleet could not process it (5xx); redeliver it
)

// Reply is the JSON body of every intake response. It is written for the
// person reading GitHub's "Recent Deliveries" page, so Message always says
// what happened and why.
type Reply struct {
	Status     string `json:"status"`
	Message    string `json:"message"`
	DeliveryID string `json:"delivery_id,omitempty"`
	Event      string `json:"event,omitempty"`
	JobID      int64  `json:"job_id,omitempty"`
	// Outcome is set when the engine handled the event; its fields (action,
	// result, instance, pool) appear at the top level of the JSON.
	*engine.Outcome
}

// Response is what a transport adapter sends back: StatusCode and Body (a
// JSON Reply, media type ContentType).
type Response struct {
	StatusCode int
	Body       []byte
}

func newResponse(status int, r Reply) Response {
	body, err := json.Marshal(r)
	if err != nil {
		// Reply holds only strings and integers; this cannot happen, but a
		// response must still be well-formed JSON if it ever does.
		body = []byte(`{"status":"failed","message":"reply could not be encoded"}`)
	}
	return Response{StatusCode: status, Body: body}
}

// rejection is one refusal of bad input: the HTTP status and why.
type rejection struct {
	status int
	reason string
}

func reject(status int, reason string) *rejection {
	return &rejection{status: status, reason: reason}
}
