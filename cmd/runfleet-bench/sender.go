package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// sendTimeout bounds one delivery, as GitHub bounds its own at 10 s.
const sendTimeout = 10 * time.Second

// payloadTemplate is a queued workflow_job payload cut around
// workflow_job.id, so a job's body is an append, not a JSON encode.
type payloadTemplate struct {
	before, after []byte
}

// idMark stands in for the job id while the template is cut.
const idMark = 987654321987654321

func loadPayload(path string) (*payloadTemplate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("payload: %w (run from the repository root, or pass -payload)", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("payload %s: %w", path, err)
	}
	job, ok := doc["workflow_job"].(map[string]any)
	if !ok || doc["action"] != "queued" {
		return nil, fmt.Errorf("payload %s: want a queued workflow_job delivery", path)
	}
	job["id"] = idMark
	body, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	mark := []byte(strconv.Itoa(idMark))
	before, after, found := bytes.Cut(body, mark)
	if !found || bytes.Contains(after, mark) {
		return nil, fmt.Errorf("payload %s: could not place the job id", path)
	}
	return &payloadTemplate{before: before, after: after}, nil
}

func (p *payloadTemplate) forJob(id int64) []byte {
	b := make([]byte, 0, len(p.before)+20+len(p.after))
	b = append(b, p.before...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, p.after...)
}

// instanceOf is the instance runfleet makes for a job in the bench pool.
func instanceOf(jobID int64) string { return runner.InstanceName(benchPool, jobID, 1) }

// delivery is one prepared, signed webhook.
type delivery struct {
	job       int64
	id        string
	body      []byte
	signature string
}

func prepare(p *payloadTemplate, secret []byte, job int64) delivery {
	body := p.forJob(job)
	return delivery{job: job, id: "bench-" + strconv.FormatInt(job, 10), body: body, signature: webhook.Sign(secret, body)}
}

// sender posts deliveries over kept-alive loopback connections.
type sender struct {
	url    string
	client *http.Client
}

func newSender(base string, conns int) *sender {
	return &sender{
		url: base + "/webhook",
		client: &http.Client{
			Timeout:   sendTimeout,
			Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute},
		},
	}
}

// send posts d and returns an error unless it was answered 2xx.
func (s *sender) send(ctx context.Context, d delivery) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(d.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhook.UserAgent)
	req.Header.Set(webhook.EventHeader, webhook.EventWorkflowJob)
	req.Header.Set(webhook.DeliveryHeader, d.id)
	req.Header.Set(webhook.SignatureHeader, d.signature)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("job %d: %w", d.job, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("job %d: answered %d: %s", d.job, resp.StatusCode, bytes.TrimSpace(answer))
	}
	return nil
}

func (s *sender) close() {
	s.client.CloseIdleConnections()
}

// sendersFor is a sender per process behind c, conns connections each.
func sendersFor(c *child, conns int) []*sender {
	var out []*sender
	for _, m := range c.members() {
		out = append(out, newSender(m.base, conns))
	}
	return out
}

func closeAll(senders []*sender) {
	for _, s := range senders {
		s.close()
	}
}
