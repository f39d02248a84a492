package webhook

import "net/http"

// Headers GitHub sends with every delivery.
const (
	EventHeader    = "X-GitHub-Event"
	DeliveryHeader = "X-GitHub-Delivery"
)

// Events the intake knows by name; every other event is acknowledged and ignored.
const (
	EventWorkflowJob = "workflow_job"
	EventPing        = "ping"
)

// HeadersFromMap builds canonical headers from a flat map such as a Lambda
// Function URL event's, whose keys arrive lowercased: http.Header.Get only
// finds canonical keys, so the map cannot be converted by a type cast.
func HeadersFromMap(m map[string]string) http.Header {
	h := make(http.Header, len(m))
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}
