package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// operator calls runfleet's operator API and health check, as an operator
// (or `runfleet instances`) would.
type operator struct {
	base   string
	token  string
	client *http.Client
}

func newOperator(base, token string) *operator {
	return &operator{base: base, token: token, client: &http.Client{Timeout: 30 * time.Second}}
}

// liveInstances is GET /api/v1/instances: every record not deleted.
func (o *operator) liveInstances(ctx context.Context) ([]*runner.Instance, error) {
	var out []*runner.Instance
	err := o.get(ctx, "/api/v1/instances", &out)
	return out, err
}

// instance is GET /api/v1/instances/{name}; nil when runfleet has no record.
func (o *operator) instance(ctx context.Context, name string) (*runner.Instance, error) {
	var out runner.Instance
	err := o.get(ctx, "/api/v1/instances/"+url.PathEscape(name), &out)
	var e *httpStatusError
	if errors.As(err, &e) && e.status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// deadLetters is what /healthz counts.
func (o *operator) deadLetters(ctx context.Context) (int, error) {
	var h struct {
		DeadLetters int `json:"dead_letters"`
	}
	err := o.get(ctx, "/healthz", &h)
	return h.DeadLetters, err
}

type httpStatusError struct {
	path   string
	status int
	body   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s answered %d: %s", e.path, e.status, e.body)
}

func (o *operator) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		if len(body) > 300 {
			body = body[:300]
		}
		return &httpStatusError{path: path, status: resp.StatusCode, body: string(body)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
