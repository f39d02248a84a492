package githubtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// deliveryItem is GitHub's "hook-delivery-item".
type deliveryItem struct {
	ID             int64      `json:"id"`
	GUID           string     `json:"guid"`
	DeliveredAt    string     `json:"delivered_at"`
	Redelivery     bool       `json:"redelivery"`
	Duration       float64    `json:"duration"`
	Status         string     `json:"status"`
	StatusCode     int        `json:"status_code"`
	Event          string     `json:"event"`
	Action         *string    `json:"action"`
	InstallationID *int64     `json:"installation_id"`
	RepositoryID   *int64     `json:"repository_id"`
	ThrottledAt    *time.Time `json:"throttled_at"`
}

// deliveryDetail is GitHub's "hook-delivery": the item with the request
// sent and the answer received.
type deliveryDetail struct {
	deliveryItem
	URL      string          `json:"url"`
	Request  deliveryRequest `json:"request"`
	Response deliveryAnswer  `json:"response"`
}

type deliveryRequest struct {
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
}

type deliveryAnswer struct {
	Headers map[string]string `json:"headers"`
	Payload *string           `json:"payload"`
}

func (d *Delivery) item() deliveryItem {
	it := deliveryItem{
		ID: d.ID, GUID: d.GUID, DeliveredAt: d.DeliveredAt.Format(time.RFC3339), Redelivery: d.Redelivery, Duration: d.Duration,
		Status: d.Status, StatusCode: d.StatusCode, Event: d.Event,
	}
	if d.Action != "" {
		it.Action = &d.Action
	}
	if d.InstallationID != 0 {
		it.InstallationID = &d.InstallationID
	}
	if d.RepositoryID != 0 {
		it.RepositoryID = &d.RepositoryID
	}
	return it
}

// deliveryCursorPrefix starts the fake's page cursors: "v1_<id>" is the
// page starting at delivery id and going back, as GitHub's look.
const deliveryCursorPrefix = "v1_"

// handleListDeliveries serves GET /app/hook/deliveries: newest first,
// per_page (default 30, at most 100), the page after `cursor`, an
// optional status=success|failure filter, and a Link header with the
// next page's cursor while there is one.
func (s *Server) handleListDeliveries(req *request) reply {
	return s.listDeliveries(req, func(*Delivery) bool { return true })
}

// listDeliveries serves one page of the attempts in a log.
func (s *Server) listDeliveries(req *request, inLog func(*Delivery) bool) reply {
	p := paginate(req.query, 0)
	start := int64(-1)
	if c := req.query.Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, deliveryCursorPrefix), 10, 64)
		if err != nil || !strings.HasPrefix(c, deliveryCursorPrefix) {
			return errorReply(http.StatusUnprocessableEntity, "Invalid cursor", req.route.docs)
		}
		start = id
	}
	want := req.query.Get("status")
	var items []deliveryItem
	var next int64
	for i := len(s.deliveries) - 1; i >= 0; i-- {
		d := s.deliveries[i]
		if !inLog(d) || start >= 0 && d.ID > start || want == "success" && !d.Delivered() || want == "failure" && d.Delivered() {
			continue
		}
		if len(items) == p.perPage {
			next = d.ID
			break
		}
		items = append(items, d.item())
	}
	rep := jsonReply(http.StatusOK, append([]deliveryItem{}, items...))
	if next != 0 {
		rep.header = http.Header{"Link": {deliveriesLink(req, p.perPage, next)}}
	}
	return rep
}

// deliveriesLink is GitHub's Link header for the next page of deliveries.
func deliveriesLink(req *request, perPage int, next int64) string {
	q := url.Values{}
	for k, v := range req.query {
		q[k] = v
	}
	q.Set("per_page", strconv.Itoa(perPage))
	q.Set("cursor", deliveryCursorPrefix+strconv.FormatInt(next, 10))
	path, _ := stripPrefix(req.http.URL.Path)
	return fmt.Sprintf("<%s%s?%s>; rel=\"next\"", req.apiBase, path, q.Encode())
}

// handleGetDelivery serves GET /app/hook/deliveries/{delivery_id}.
func (s *Server) handleGetDelivery(req *request) reply {
	return s.getDelivery(req, func(*Delivery) bool { return true })
}

// getDelivery serves one attempt of a log in full.
func (s *Server) getDelivery(req *request, inLog func(*Delivery) bool) reply {
	id, err := strconv.ParseInt(req.params["delivery_id"], 10, 64)
	if err != nil {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if i, found := slices.BinarySearchFunc(s.deliveries, id, func(d *Delivery, id int64) int { return cmp.Compare(d.ID, id) }); found && inLog(s.deliveries[i]) {
		d := s.deliveries[i]
		detail := deliveryDetail{deliveryItem: d.item(), URL: d.url,
			Request:  deliveryRequest{Headers: d.headers, Payload: d.payload},
			Response: deliveryAnswer{Headers: map[string]string{}}}
		if d.Sent {
			detail.Response.Payload = &d.answer
		}
		return jsonReply(http.StatusOK, detail)
	}
	return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
}
