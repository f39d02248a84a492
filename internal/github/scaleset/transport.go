package scaleset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// Size limits on what the client reads: a message holds at most 50 job
// messages, everything else is one small object. An answer over its limit
// is ErrBadResponse, never a partial decode.
const (
	maxMessageBytes = 8 << 20
	maxObjectBytes  = 1 << 20
	maxErrorBytes   = 64 << 10
)

// apiVersion is sent with every Actions-service call.
const apiVersion = "6.0-preview"

// utf8BOM: the Actions service may start a body with one.
var utf8BOM = []byte("\xef\xbb\xbf")

// call is one HTTP exchange.
type call struct {
	op     string
	res    resource
	method string
	url    string // absolute, query included
	auth   string // the Authorization header's value
	body   any    // encoded as JSON when non-nil
	header http.Header
	// ok lists the statuses that mean success; the first answer with
	// another status is classified as an error.
	ok []int
	// out, when non-nil, receives the decoded JSON of a 200/201 answer.
	out   any
	limit int64
	poll  bool // the long poll: PollTimeout instead of CallTimeout
}

// send makes the exchange and returns the success status, or an *Error.
func (c *Client) send(ctx context.Context, k call) (int, error) {
	timeout := c.cfg.CallTimeout
	if k.poll {
		timeout = c.cfg.PollTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if k.body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // URLs in bodies stay as written
		if err := enc.Encode(k.body); err != nil {
			return 0, &Error{Op: k.op, Kind: ErrUnexpected, Err: fmt.Errorf("encoding the request: %w", err)}
		}
		body = &buf
	}
	req, err := http.NewRequestWithContext(ctx, k.method, k.url, body)
	if err != nil {
		return 0, &Error{Op: k.op, Kind: ErrUnexpected, Err: err}
	}
	for name, vs := range k.header {
		req.Header[name] = vs
	}
	if k.auth != "" {
		req.Header.Set("Authorization", k.auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)

	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &Error{Op: k.op, Kind: ErrTransport, Err: err}
	}
	defer func() { _ = resp.Body.Close() }()

	if !slices.Contains(k.ok, resp.StatusCode) {
		raw, _ := readLimited(resp.Body, maxErrorBytes)
		return 0, classify(k.op, k.res, resp, raw, c.now())
	}
	if k.out == nil || resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	limit := k.limit
	if limit == 0 {
		limit = maxObjectBytes
	}
	raw, err := readLimited(resp.Body, limit)
	if err != nil {
		return 0, badResponse(k.op, resp, err)
	}
	if len(raw) == 0 {
		// A 200 with no body (ARC #4285, "200 … EOF").
		return 0, badResponse(k.op, resp, io.ErrUnexpectedEOF)
	}
	if err := json.Unmarshal(raw, k.out); err != nil {
		return 0, badResponse(k.op, resp, fmt.Errorf("decoding the answer: %w", err))
	}
	return resp.StatusCode, nil
}

func badResponse(op string, resp *http.Response, err error) *Error {
	return &Error{
		Op: op, Kind: ErrBadResponse, StatusCode: resp.StatusCode,
		ActivityID: resp.Header.Get("ActivityId"), RequestID: resp.Header.Get("X-GitHub-Request-Id"),
		Err: err,
	}
}

// errTooLarge: an answer went over its size limit.
var errTooLarge = errors.New("answer over the size limit")

// readLimited reads at most limit bytes and fails if there were more;
// a leading byte-order mark is dropped.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", errTooLarge, limit)
	}
	return bytes.TrimPrefix(raw, utf8BOM), nil
}

// withAPIVersion adds api-version to a URL's query.
func withAPIVersion(u string) string {
	sep := "?"
	if bytes.ContainsRune([]byte(u), '?') {
		sep = "&"
	}
	return u + sep + "api-version=" + apiVersion
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
