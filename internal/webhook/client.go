package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// UserAgent is what Send identifies as; GitHub sends "GitHub-Hookshot/<id>".
const UserAgent = "GitHub-Hookshot/runfleet-cli"

// maxReplyBytes bounds how much of a response Send reads.
const maxReplyBytes = 1 << 20

// SendResult is the answer to one delivery sent with Send.
type SendResult struct {
	// DeliveryID is the X-GitHub-Delivery that was sent (generated if none was given).
	DeliveryID string
	StatusCode int
	Body       []byte
	// Reply is Body decoded, or nil when Body is not a runfleet Reply.
	Reply *Reply
}

// Send signs body with secret and POSTs it to url exactly as GitHub delivers a
// webhook. An empty deliveryID gets a fresh random GUID; pass the same id
// again to simulate a redelivery. Any HTTP answer, 4xx and 5xx included, is a
// result, not an error: the error is for requests that got no answer.
func Send(ctx context.Context, url string, secret []byte, event string, body []byte, deliveryID string) (*SendResult, error) {
	if deliveryID == "" {
		id, err := NewDeliveryID()
		if err != nil {
			return nil, err
		}
		deliveryID = id
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: building request to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", mediaJSON)
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(EventHeader, event)
	req.Header.Set(DeliveryHeader, deliveryID)
	req.Header.Set(SignatureHeader, Sign(secret, body))

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webhook: sending %s delivery %s to %s: %w", event, deliveryID, url, err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return nil, fmt.Errorf("webhook: reading the answer to delivery %s from %s: %w", deliveryID, url, err)
	}

	res := &SendResult{DeliveryID: deliveryID, StatusCode: resp.StatusCode, Body: respBody}
	var reply Reply
	if json.Unmarshal(respBody, &reply) == nil && reply.Status != "" {
		res.Reply = &reply
	}
	return res, nil
}

// NewDeliveryID returns a random (version 4) GUID in the form GitHub uses for
// X-GitHub-Delivery.
func NewDeliveryID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook: generating a delivery id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
