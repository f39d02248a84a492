package scaleset

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// resource is what a call's path names, so that a bare 404 (no exception
// body) can be told apart: a missing session, scale set or runner.
type resource int

const (
	resOther resource = iota
	resScaleSet
	resSession
	resQueue
	resRunner
)

// exception is the Actions service's error body.
type exception struct {
	TypeName string `json:"typeName"`
	Message  string `json:"message"`
}

// defaultRateLimitWait is how long a rate limit lasts when GitHub's
// answer says nothing about it (the same minimum as runfleet's budget).
const defaultRateLimitWait = time.Minute

// classify turns a failed answer into an *Error. body is the (limited,
// BOM-trimmed) error body; it may be empty, JSON or plain text.
func classify(op string, res resource, resp *http.Response, body []byte, now time.Time) *Error {
	e := &Error{
		Op:         op,
		StatusCode: resp.StatusCode,
		ActivityID: resp.Header.Get("ActivityId"),
		RequestID:  resp.Header.Get("X-GitHub-Request-Id"),
	}
	var ex exception
	if json.Unmarshal(body, &ex) == nil && (ex.TypeName != "" || ex.Message != "") {
		e.TypeName, e.Message = ex.TypeName, ex.Message
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	if k := kindOfException(e.TypeName, e.Message, resp.StatusCode); k != nil {
		e.Kind = k
		return e
	}
	e.Kind = kindOfStatus(res, resp.StatusCode)
	if rl := rateLimitOf(resp, e.Message, now); rl != nil {
		e.Kind, e.RateLimit = ErrRateLimited, rl
	}
	return e
}

// kindOfException reads the documented exception names; the names are
// matched by substring because the service sends them fully qualified.
func kindOfException(typeName, message string, status int) error {
	switch {
	case typeName == "":
		return nil
	case strings.Contains(typeName, "SessionConflict"):
		return ErrSessionConflict
	case strings.Contains(typeName, "SessionExpired"):
		return ErrSessionExpired
	case strings.Contains(typeName, "RunnerScaleSetNotFound"):
		return ErrScaleSetNotFound
	case strings.Contains(typeName, "JobStillRunning"):
		return ErrRunnerBusy
	case strings.Contains(typeName, "AgentNotFound"):
		return ErrRunnerNotFound
	case strings.Contains(typeName, "AgentExists"):
		return ErrRunnerExists
	case strings.Contains(typeName, "RunnerAdminException") && status == http.StatusNotFound &&
		strings.Contains(strings.ToLower(message), "session"):
		// "runner referenced a session ID that doesn't exist": the
		// broker evicted the session (scaleset PR #123).
		return ErrSessionNotFound
	}
	return nil
}

// kindOfStatus is the kind when no exception name decided it.
func kindOfStatus(res resource, status int) error {
	switch {
	case status == http.StatusConflict && res == resSession:
		return ErrSessionConflict
	case status == http.StatusUnauthorized && res == resQueue:
		return ErrQueueTokenExpired
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrUnauthorized
	case status == http.StatusNotFound:
		switch res {
		case resSession, resQueue:
			return ErrSessionNotFound
		case resScaleSet:
			return ErrScaleSetNotFound
		case resRunner:
			return ErrRunnerNotFound
		}
	case status >= 500:
		return ErrServer
	}
	return ErrUnexpected
}

// rateLimitOf reads a rate limit from a 429, or from a 403 that says it
// is one (GitHub's REST convention: x-ratelimit-remaining: 0 or a
// Retry-After). Any other answer returns nil.
func rateLimitOf(resp *http.Response, message string, now time.Time) *github.RateLimitError {
	h := resp.Header
	retryAfter, hasRetryAfter := github.ParseRetryAfter(h.Get("Retry-After"), now)
	exhausted := h.Get("X-RateLimit-Remaining") == "0"
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden && (hasRetryAfter || exhausted):
	default:
		return nil
	}
	rl := &github.RateLimitError{RetryAt: now.Add(defaultRateLimitWait), Secondary: !exhausted, Message: message}
	switch {
	case hasRetryAfter:
		rl.RetryAt = now.Add(retryAfter)
	case exhausted:
		if secs, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			rl.RetryAt = time.Unix(secs, 0)
		}
	}
	return rl
}
