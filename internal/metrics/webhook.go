package metrics

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// webhookReply is the part of the intake's JSON reply (webhook.Reply) a
// delivery's labels are read from: the intake's answer is the one record of
// what it made of the delivery, in both modes.
type webhookReply struct {
	Status string `json:"status"`
	Action string `json:"action"`
}

// ClassifyWebhook labels one delivery from its X-GitHub-Event header and
// the intake's answer (status code and JSON body).
func ClassifyWebhook(event string, status int, body []byte) (eventLabel, action, result string) {
	eventLabel = Known(WebhookEvents, event)
	action = None
	var reply webhookReply
	_ = json.Unmarshal(body, &reply)
	switch {
	case status == http.StatusUnauthorized:
		result = WebhookBadSignature
	case status == http.StatusRequestEntityTooLarge:
		result = WebhookTooLarge
	case status >= 500:
		result = WebhookError
	case status >= 400:
		result = WebhookBadRequest
	case reply.Status == "processed":
		result = WebhookAccepted
	default:
		result = WebhookIgnored
	}
	if reply.Action != "" {
		action = Known(WebhookActions, reply.Action)
	}
	return eventLabel, action, result
}

// ObserveWebhooks counts every delivery next (the webhook intake) answers.
func ObserveWebhooks(next http.Handler, rec Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &capturingWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(cw, r)
		rec.Webhook(ClassifyWebhook(r.Header.Get("X-GitHub-Event"), cw.status, cw.body.Bytes()))
	})
}

// capturingWriter keeps the status and the start of the body: a reply is
// a few hundred bytes, and only its status and action are read.
type capturingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

const maxCapturedReply = 4 << 10

func (c *capturingWriter) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *capturingWriter) Write(p []byte) (int, error) {
	if room := maxCapturedReply - c.body.Len(); room > 0 {
		c.body.Write(p[:min(len(p), room)])
	}
	return c.ResponseWriter.Write(p)
}
