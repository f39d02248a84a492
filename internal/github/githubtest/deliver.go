package githubtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Deliver makes one attempt at a webhook delivery the way GitHub's sender
// does, and logs it in the delivery log. req is the signed POST
// (WebhookRequest, plus any further headers); its X-GitHub-Delivery is the
// delivery's GUID, which every attempt of one delivery keeps, and
// redelivery marks an attempt after the first. client waits for the answer:
// give it GitHub's 10 s Timeout. The event comes from X-GitHub-Event, the
// action, installation and repository from the payload.
//
// The attempt is logged as GitHub logs it: "OK" on a 2xx answer, "Invalid
// HTTP Response: N" on any other; "failed to connect" (502, nothing sent)
// when the connection was refused; "timed out" (0) when no answer came in
// time, though the receiver may have processed it; "connection reset" (0)
// when the connection broke after the request was sent. Unlike
// SendWorkflowJob it is for a caller that plays the sender itself, resends
// included: the fake never resends. An attempt the caller cancelled (req's
// context ended) is not logged — it is the caller stopping, not GitHub
// failing — and is the error, as is a request whose body cannot be read.
func (s *Server) Deliver(client *http.Client, req *http.Request, redelivery bool) (Delivery, error) {
	payload, err := requestBody(req)
	if err != nil {
		return Delivery{}, err
	}
	var fields struct {
		Action       string `json:"action"`
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository *struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(payload, &fields) // a payload that is not JSON is logged without them
	d := Delivery{
		GUID: req.Header.Get("X-GitHub-Delivery"), Event: req.Header.Get("X-GitHub-Event"), Action: fields.Action,
		Redelivery: redelivery, url: req.URL.String(), headers: flatHeaders(req.Header), payload: payload,
	}
	if fields.Installation != nil {
		d.InstallationID = fields.Installation.ID
	}
	if fields.Repository != nil {
		d.RepositoryID = fields.Repository.ID
	}
	if !json.Valid(payload) {
		d.payload = nil
	}
	s.mu.Lock()
	s.nextDeliveryID++
	d.ID = s.nextDeliveryID + 10_000_000_000
	d.DeliveredAt = s.now().UTC().Truncate(time.Second)
	s.mu.Unlock()

	start := time.Now()
	resp, err := client.Do(req)
	d.Duration = time.Since(start).Seconds()
	switch {
	case err == nil:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		d.Sent, d.StatusCode, d.answer = true, resp.StatusCode, string(body)
		d.Status = deliveryStatus(resp.StatusCode)
	case req.Context().Err() != nil:
		return d, fmt.Errorf("githubtest: delivery %s not attempted: %w", d.GUID, req.Context().Err())
	case refused(err):
		d.Status, d.StatusCode = "failed to connect", http.StatusBadGateway
	case timedOut(err):
		d.Sent, d.Status = true, "timed out"
	default:
		d.Sent, d.Status = true, "connection reset"
	}
	s.logDelivery(&d)
	return d, nil
}

// requestBody reads req's body and leaves req able to send it.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("githubtest: read the delivery's body: %w", err)
		}
		defer body.Close()
		return io.ReadAll(body)
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("githubtest: read the delivery's body: %w", err)
	}
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// refused: the connection was never made, so nothing was sent.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
