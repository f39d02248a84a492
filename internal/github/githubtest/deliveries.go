package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// DeliveryFailure is how a webhook delivery fails at GitHub's side.
// GitHub never resends a failed delivery by itself; neither does the fake.
type DeliveryFailure int

const (
	// DeliveryUnsent: GitHub could not reach the endpoint ("failed to
	// connect"); nothing was sent.
	DeliveryUnsent DeliveryFailure = iota + 1
	// DeliveryTimedOut: GitHub sent the webhook and gave up waiting for
	// the answer (10 s): the receiver got and processed it, yet GitHub
	// logs the delivery failed.
	DeliveryTimedOut
)

// WithFailedDeliveries makes the fraction rate (0..1) of the deliveries
// SendWorkflowJob makes fail at GitHub's side, the way kind says, spread
// evenly and reproducibly: delivery n fails when ⌊n·rate⌋ grows at n.
func WithFailedDeliveries(rate float64, kind DeliveryFailure) Option {
	return func(s *Server) { s.deliveryFailRate, s.deliveryFailKind = rate, kind }
}

// Delivery is one attempt in the fake's webhook delivery log, as
// GET /app/hook/deliveries lists it (and, with Request, GET
// /app/hook/deliveries/{delivery_id} shows it).
type Delivery struct {
	ID             int64
	GUID           string
	DeliveredAt    time.Time
	Duration       float64
	Status         string
	StatusCode     int
	Event          string
	Action         string
	InstallationID int64
	RepositoryID   int64
	// Sent says the request reached the endpoint.
	Sent bool
	// Redelivery marks an attempt after the first with the same GUID.
	Redelivery bool

	repo    string // "owner/repo": which organization and repository webhooks log it
	url     string
	headers map[string]string
	payload json.RawMessage
	answer  string
}

// Delivered says GitHub counts the attempt a success (a 2xx answer).
func (d Delivery) Delivered() bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

// Answered says the endpoint answered the attempt, with StatusCode.
func (d Delivery) Answered() bool { return d.Sent && d.StatusCode != 0 }

// SendWorkflowJob plays GitHub's webhook sender: it builds the job's
// workflow_job delivery (WorkflowJobWebhook) with a new GUID, POSTs it
// signed with secret to url and logs the attempt as GitHub does — unless
// WithFailedDeliveries fails it, which is logged and never resent. The
// error is only for a delivery the fake could not build.
func (s *Server) SendWorkflowJob(url string, secret []byte, jobID int64, action string, installationID int64) (Delivery, error) {
	body, err := s.WorkflowJobWebhook(jobID, action, "", installationID)
	if err != nil {
		return Delivery{}, err
	}
	d, fail := s.newDelivery(jobID, action, installationID)
	req, err := WebhookRequest(url, secret, "workflow_job", d.GUID, body)
	if err != nil {
		return Delivery{}, err
	}
	d.url, d.payload, d.headers = url, body, flatHeaders(req.Header)
	start := time.Now()
	if fail != DeliveryUnsent {
		d.Sent = true
		d.StatusCode, d.answer = post(req)
	}
	d.Duration = time.Since(start).Seconds()
	switch fail {
	case DeliveryUnsent:
		d.Status, d.StatusCode = "failed to connect", http.StatusBadGateway
	case DeliveryTimedOut:
		d.Status, d.StatusCode, d.answer = "timed out", 0, ""
	default:
		d.Status = deliveryStatus(d.StatusCode)
	}
	s.logDelivery(&d)
	return d, nil
}

// logDelivery adds an attempt to the log, which stays in id order even
// when a slow attempt ends after a later one (the list pages by id).
func (s *Server) logDelivery(d *Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.deliveries)
	for i > 0 && s.deliveries[i-1].ID > d.ID {
		i--
	}
	s.deliveries = slices.Insert(s.deliveries, i, d)
}

// newDelivery numbers the next delivery and decides whether it fails.
func (s *Server) newDelivery(jobID int64, action string, installationID int64) (Delivery, DeliveryFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextDeliveryID++
	n := s.nextDeliveryID
	var fail DeliveryFailure
	if rate := s.deliveryFailRate; rate > 0 && int64(float64(n)*rate) > int64(float64(n-1)*rate) {
		fail = s.deliveryFailKind
	}
	repo := ""
	if j, ok := s.jobs[jobID]; ok {
		repo = j.Repo
	}
	return Delivery{
		ID:   n + 10_000_000_000, // GitHub's delivery ids are large
		GUID: fmt.Sprintf("%08x-cc78-11e3-81ab-%012x", n, jobID), DeliveredAt: s.now().UTC().Truncate(time.Second),
		Event: "workflow_job", Action: action, InstallationID: installationID, RepositoryID: stableID(repo), repo: repo,
	}, fail
}

// Deliveries returns the delivery log, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, len(s.deliveries))
	for i, d := range s.deliveries {
		out[i] = *d
	}
	return out
}

// post sends one delivery and returns the answer's status and body (0
// when none came).
func post(req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(body)
}

// deliveryStatus is the status text GitHub logs for an answer.
func deliveryStatus(code int) string {
	switch {
	case code >= 200 && code < 300:
		return "OK"
	case code == 0:
		return "failed to connect"
	default:
		return fmt.Sprintf("Invalid HTTP Response: %d", code)
	}
}

func flatHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}
