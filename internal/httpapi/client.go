package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// DefaultClientTimeout bounds one operator API call.
const DefaultClientTimeout = time.Minute

// maxAnswerBytes bounds how much of an answer the client reads; a list of
// thousands of instances is a few MB.
const maxAnswerBytes = 64 << 20

// Client calls a running server's operator API.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client of the server at baseURL (e.g.
// http://127.0.0.1:8080) sending token as its bearer token. hc nil means a
// client with DefaultClientTimeout.
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://host:port", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultClientTimeout}
	}
	return &Client{base: u, token: token, http: hc}, nil
}

// Error is an error answer from the server.
type Error struct {
	StatusCode int
	// Message is the server's "error" text, or the start of a body that was
	// not runfleet JSON (a proxy's error page, say).
	Message string
}

// Error puts the server's own words first: they say what went wrong; the
// status follows for whoever needs it.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (server answered %d %s)", e.Message, e.StatusCode, http.StatusText(e.StatusCode))
}

// ListInstances returns the live instances, of one pool if pool != "".
func (c *Client) ListInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	q := url.Values{}
	if pool != "" {
		q.Set("pool", pool)
	}
	var list []*runner.Instance
	err := c.call(ctx, http.MethodGet, "instances", q, &list)
	return list, err
}

// InstanceFilter narrows ListInstancesWhere; zero fields match all live
// instances.
type InstanceFilter struct {
	Pool     string
	Statuses []runner.Status
	// Deleted adds the deleted instances the server still keeps
	// (store.DeletedRetention); Statuses holding runner.StatusDeleted
	// implies it. A server whose store cannot list them answers 501.
	Deleted bool
}

// ListInstancesWhere returns the instances the filter matches: live ones,
// then the deleted ones asked for, most recently deleted first.
func (c *Client) ListInstancesWhere(ctx context.Context, f InstanceFilter) ([]*runner.Instance, error) {
	q := url.Values{}
	if f.Pool != "" {
		q.Set("pool", f.Pool)
	}
	for _, s := range f.Statuses {
		q.Add("status", string(s))
	}
	if f.Deleted {
		q.Set("deleted", "true")
	}
	var list []*runner.Instance
	err := c.call(ctx, http.MethodGet, "instances", q, &list)
	return list, err
}

// ListOpenJobs returns the unsettled demand (jobs waiting for a runner,
// for approval, or matching no pool), each with what it waits for, of one
// pool if pool != "", oldest first.
func (c *Client) ListOpenJobs(ctx context.Context, pool string) ([]Job, error) {
	q := url.Values{}
	if pool != "" {
		q.Set("pool", pool)
	}
	var list []Job
	err := c.call(ctx, http.MethodGet, "jobs", q, &list)
	return list, err
}

// Why returns the job's timeline and the answer to what it waits for.
func (c *Client) Why(ctx context.Context, jobID int64) (*engine.Timeline, error) {
	var tl engine.Timeline
	if err := c.call(ctx, http.MethodGet, fmt.Sprintf("jobs/%d/why", jobID), nil, &tl); err != nil {
		return nil, err
	}
	return &tl, nil
}

// GetInstance returns one instance; an unknown one is an *Error with
// StatusCode 404.
func (c *Client) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	var inst runner.Instance
	if err := c.call(ctx, http.MethodGet, "instances/"+url.PathEscape(name), nil, &inst); err != nil {
		return nil, err
	}
	return &inst, nil
}

// DeleteInstance asks for the instance's delete, forced or not, and
// returns it as marked. A busy runner (without force) is an *Error with
// StatusCode 409.
func (c *Client) DeleteInstance(ctx context.Context, name string, force bool) (*runner.Instance, error) {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	var inst runner.Instance
	if err := c.call(ctx, http.MethodDelete, "instances/"+url.PathEscape(name), q, &inst); err != nil {
		return nil, err
	}
	return &inst, nil
}

// Reconcile runs a reconcile pass. A pass with errors returns its result
// and an *Error.
func (c *Client) Reconcile(ctx context.Context) (*ReconcileResult, error) {
	var res ReconcileResult
	err := c.call(ctx, http.MethodPost, "reconcile", nil, &res)
	var apiErr *Error
	if err != nil && !errors.As(err, &apiErr) {
		return nil, err
	}
	return &res, err
}

// call sends one request and decodes a 2xx answer into out. An error
// answer that is a ReconcileResult is decoded into out as well.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, out any) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + Prefix + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, u.Redacted(), err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach runfleet at %s: %w", c.base.Redacted(), TransportCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", method, u.Path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("answer to %s %s is not the expected JSON: %w", method, u.Path, err)
		}
		return nil
	}
	if _, isResult := out.(*ReconcileResult); isResult {
		_ = json.Unmarshal(body, out)
	}
	return answerError(resp.StatusCode, body)
}

// TransportCause strips from a failed request's error what the caller's
// message says already — *url.Error's method and URL, *net.OpError's
// operation and address — leaving the cause ("connect: connection
// refused"). errors.Is still matches through what is left.
func TransportCause(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		err = urlErr.Err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		err = opErr.Err
	}
	return err
}

// answerError builds the *Error for a non-2xx answer.
func answerError(status int, body []byte) *Error {
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		return &Error{StatusCode: status, Message: eb.Error}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		text = "(empty answer)"
	}
	return &Error{StatusCode: status, Message: text}
}
