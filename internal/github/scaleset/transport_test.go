package scaleset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// answer serves one canned answer for every request.
func answer(t *testing.T, status int, header http.Header, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{Owner: github.Owner{Org: "o"}, Tokens: noTokens{}, GitHubURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c.apiURL = srv.URL
	return c
}

type noTokens struct{}

func (noTokens) RegistrationToken(context.Context, github.Owner) (RegistrationToken, error) {
	return RegistrationToken{}, errors.New("not used")
}

func get(t *testing.T, c *Client, res resource, out any) error {
	t.Helper()
	_, err := c.send(t.Context(), call{op: "test", res: res, method: http.MethodGet, url: c.apiURL + "/x", ok: []int{200}, out: out})
	return err
}

// Every documented exception and status maps to its kind.
func TestClassify(t *testing.T) {
	exc := func(name, msg string) string { return `{"typeName":"` + name + `","message":"` + msg + `"}` }
	cases := []struct {
		name   string
		status int
		res    resource
		header http.Header
		body   string
		want   error
	}{
		{"conflict by name", 409, resSession, nil, exc("GitHub.Actions.Runtime.RunnerScaleSetSessionConflictException", "held"), ErrSessionConflict},
		{"conflict by status", 409, resSession, nil, "", ErrSessionConflict},
		{"session expired", 400, resSession, nil, exc("RunnerScaleSetSessionExpiredException", ""), ErrSessionExpired},
		{"session gone from redis", 404, resSession, nil, exc("RunnerAdminException", "runner referenced a session ID that doesn't exist in redis"), ErrSessionNotFound},
		{"bare 404 on a session", 404, resSession, nil, "", ErrSessionNotFound},
		{"scale set not found", 404, resSession, nil, exc("RunnerScaleSetNotFoundException", ""), ErrScaleSetNotFound},
		{"bare 404 on a scale set", 404, resScaleSet, nil, "", ErrScaleSetNotFound},
		{"busy", 400, resRunner, nil, exc("GitHub.DistributedTask.WebApi.JobStillRunningException", ""), ErrRunnerBusy},
		{"agent not found", 404, resRunner, nil, exc("AgentNotFoundException", ""), ErrRunnerNotFound},
		{"agent exists", 409, resScaleSet, nil, exc("AgentExistsException", ""), ErrRunnerExists},
		{"queue token", 401, resQueue, nil, "expired", ErrQueueTokenExpired},
		{"admin token", 401, resScaleSet, nil, "", ErrUnauthorized},
		{"forbidden", 403, resOther, nil, exc("AccessDeniedException", "no"), ErrUnauthorized},
		{"429", 429, resOther, http.Header{"Retry-After": {"12"}}, "", ErrRateLimited},
		{"403 exhausted", 403, resOther, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2000000000"}}, "", ErrRateLimited},
		{"500", 500, resOther, nil, "<html>", ErrServer},
		{"502", 502, resQueue, nil, "", ErrServer},
		{"418", 418, resOther, nil, "", ErrUnexpected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := get(t, answer(t, c.status, c.header, c.body), c.res, nil)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.want) {
				t.Fatalf("%v: want *Error of kind %v", err, c.want)
			}
			if e.StatusCode != c.status {
				t.Errorf("status %d, want %d", e.StatusCode, c.status)
			}
		})
	}
}

func TestRateLimitRetryAt(t *testing.T) {
	err := get(t, answer(t, 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2000000000"}}, ""), resOther, nil)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.RetryAt.Equal(time.Unix(2000000000, 0)) || rl.Secondary {
		t.Errorf("%v: want a primary limit until the reset", err)
	}
	err = get(t, answer(t, 429, http.Header{"Retry-After": {"5"}}, ""), resOther, nil)
	if !errors.As(err, &rl) || time.Until(rl.RetryAt) > 6*time.Second || !rl.Secondary {
		t.Errorf("%v: want a secondary limit about 5s away", err)
	}
}

// Answers that cannot be used are ErrBadResponse: over the size limit, a
// 200 with no body (ARC #4285), not JSON. A byte-order mark is fine.
func TestUnusableAnswers(t *testing.T) {
	var out map[string]any
	huge := `{"a":"` + strings.Repeat("x", maxObjectBytes) + `"}`
	for name, body := range map[string]string{"too large": huge, "empty": "", "not json": "<html>"} {
		err := get(t, answer(t, 200, nil, body), resOther, &out)
		if !errors.Is(err, ErrBadResponse) || !IsRetryable(err) {
			t.Errorf("%s: %v, want retryable ErrBadResponse", name, err)
		}
	}
	if err := get(t, answer(t, 200, nil, "\xef\xbb\xbf{\"a\":1}"), resOther, &out); err != nil || out["a"] != 1.0 {
		t.Errorf("BOM: %v %v", err, out)
	}
}

func TestJWTExpiry(t *testing.T) {
	// {"exp":2000000000}
	if got := jwtExpiry("e30.eyJleHAiOjIwMDAwMDAwMDB9.sig"); !got.Equal(time.Unix(2000000000, 0)) {
		t.Errorf("exp %v", got)
	}
	for _, bad := range []string{"", "opaque", "a.b.c", "e30.e30.sig"} {
		if !jwtExpiry(bad).IsZero() {
			t.Errorf("%q: want zero", bad)
		}
	}
}

func TestURLs(t *testing.T) {
	cases := map[string]string{
		"https://github.com":        "https://api.github.com",
		"https://acme.ghe.com":      "https://api.acme.ghe.com",
		"https://ghes.example.com/": "https://ghes.example.com/api/v3",
	}
	for web, want := range cases {
		c, err := New(Config{Owner: github.Owner{Enterprise: "e"}, Tokens: noTokens{}, GitHubURL: web})
		if err != nil || c.apiURL != want {
			t.Errorf("%s: api %q (%v), want %q", web, c.apiURL, err, want)
		}
	}
	for owner, want := range map[github.Owner]string{
		{Org: "o"}:            "https://github.com/o",
		{Org: "o", Repo: "r"}: "https://github.com/o/r",
		{Enterprise: "e"}:     "https://github.com/enterprises/e",
	} {
		c, _ := New(Config{Owner: owner, Tokens: noTokens{}})
		if c.configURL != want {
			t.Errorf("%v: config URL %q, want %q", owner, c.configURL, want)
		}
	}
	if got := appendPath("https://b.example/scalesets/message?x=1", "42"); got != "https://b.example/scalesets/message/42?x=1" {
		t.Errorf("appendPath: %s", got)
	}
	if got := addQuery("https://b.example/m", "lastMessageId", "7"); got != "https://b.example/m?lastMessageId=7" {
		t.Errorf("addQuery: %s", got)
	}
}
