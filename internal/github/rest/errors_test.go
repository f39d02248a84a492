package rest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// answer is one canned GitHub response.
type answer struct {
	status  int
	headers map[string]string
	body    string
}

// cannedGitHub answers every request with the same response and counts
// requests. It is for shapes the fake server does not need to model: each
// case here is one raw answer and what the port must make of it.
func cannedGitHub(t *testing.T, a answer) (*rest.Client, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if got := r.Header.Get("Authorization"); got != "Bearer test-pat" {
			t.Errorf("Authorization = %q", got)
		}
		for k, v := range a.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	c, err := rest.New(rest.Options{BaseURL: srv.URL, Token: "test-pat"})
	if err != nil {
		t.Fatal(err)
	}
	return c, &hits
}

var org = github.Owner{Org: "octo-org"}

func removeRef() github.RunnerRef {
	return github.RunnerRef{Owner: org, ID: 42, Name: "runfleet-pool-1-1"}
}

func TestRemoveRunnerMapsEveryAnswer(t *testing.T) {
	reset := time.Now().Add(10 * time.Minute).Truncate(time.Second)
	resetHeader := strconv.FormatInt(reset.Unix(), 10)
	secondaryDocs := `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	type want struct {
		nilErr     bool
		busy       bool
		permission bool
		rateLimit  bool
		secondary  bool
		retryAt    time.Time     // exact, for primary limits
		retryIn    time.Duration // approximate, for secondary ones
		text       string
	}
	cases := []struct {
		name string
		a    answer
		want want
	}{
		{"204 removed", answer{status: 204}, want{nilErr: true}},
		{"404 already gone", answer{status: 404, body: `{"message":"Not Found"}`}, want{nilErr: true}},
		{"422 busy", answer{status: 422, body: `{"message":"Runner \"runfleet-pool-1-1\" is still running a job\"","documentation_url":"x"}`},
			want{busy: true, text: "still running a job"}},
		{"403 permission", answer{status: 403, headers: map[string]string{"X-RateLimit-Remaining": "4999", "X-RateLimit-Limit": "5000"}, body: `{"message":"Resource not accessible by integration"}`},
			want{permission: true, text: "Self-hosted runners"}},
		{"403 primary", answer{status: 403, headers: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": resetHeader}, body: `{"message":"API rate limit exceeded for installation ID 1."}`},
			want{rateLimit: true, retryAt: reset}},
		{"429 primary", answer{status: 429, headers: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": resetHeader}, body: `{"message":"API rate limit exceeded"}`},
			want{rateLimit: true, retryAt: reset}},
		{"429 retry-after", answer{status: 429, headers: map[string]string{"Retry-After": "30", "X-RateLimit-Remaining": "100"}, body: `{"message":"too many"}`},
			want{rateLimit: true, secondary: true, retryIn: 30 * time.Second}},
		{"429 bare", answer{status: 429, body: `{"message":"too many"}`},
			want{rateLimit: true, secondary: true, retryIn: time.Minute}},
		{"403 secondary with retry-after", answer{status: 403, headers: map[string]string{"Retry-After": "90"}, body: secondaryDocs},
			want{rateLimit: true, secondary: true, retryIn: 90 * time.Second}},
		{"403 secondary without retry-after", answer{status: 403, body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`},
			want{rateLimit: true, secondary: true, retryIn: time.Minute}},
		{"500", answer{status: 500, body: `{"message":"Server Error"}`}, want{text: "500"}},
		{"401", answer{status: 401, body: `{"message":"Bad credentials"}`}, want{text: "bad credentials"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, hits := cannedGitHub(t, tc.a)
			before := time.Now()
			err := c.RemoveRunner(context.Background(), removeRef())
			if tc.want.nilErr {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("err = nil")
			}
			if got := errors.Is(err, github.ErrRunnerBusy); got != tc.want.busy {
				t.Errorf("busy = %v for %v", got, err)
			}
			var pe *github.PermissionError
			if got := errors.As(err, &pe); got != tc.want.permission {
				t.Errorf("permission error = %v for %v", got, err)
			}
			var rl *github.RateLimitError
			if got := errors.As(err, &rl); got != tc.want.rateLimit {
				t.Fatalf("rate limit = %v for %v", got, err)
			}
			if rl != nil {
				if rl.Secondary != tc.want.secondary {
					t.Errorf("secondary = %v", rl.Secondary)
				}
				if !tc.want.retryAt.IsZero() && !rl.RetryAt.Equal(tc.want.retryAt) {
					t.Errorf("RetryAt = %s, want the reset %s", rl.RetryAt, tc.want.retryAt)
				}
				if tc.want.retryIn > 0 {
					lo, hi := before.Add(tc.want.retryIn), time.Now().Add(tc.want.retryIn)
					if rl.RetryAt.Before(lo) || rl.RetryAt.After(hi) {
						t.Errorf("RetryAt = %s, want about now+%s", rl.RetryAt, tc.want.retryIn)
					}
				}
				// While the limit lasts the client refuses without calling.
				n := hits.Load()
				err2 := c.RemoveRunner(context.Background(), removeRef())
				var rl2 *github.RateLimitError
				if !errors.As(err2, &rl2) || rl2.RetryAt.Before(rl.RetryAt) {
					t.Errorf("second call: %v, want a RateLimitError until %s", err2, rl.RetryAt)
				}
				if hits.Load() != n {
					t.Errorf("a call during the rate limit reached GitHub")
				}
			}
			if tc.want.text != "" && !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want.text)) {
				t.Errorf("error %q does not mention %q", err, tc.want.text)
			}
		})
	}
}

// go-github itself refuses calls after a response with 0 remaining, without
// contacting GitHub; that must still come back as the port's rate limit
// with the reset time — including for another operation than the one that
// hit the limit.
func TestGoGitHubsLocalRefusalIsARateLimit(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		if n == 1 {
			// The last of the budget: a success that leaves 0 remaining.
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		t.Errorf("request %d reached GitHub after the budget was spent", n)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	c, err := rest.New(rest.Options{BaseURL: srv.URL, Token: "test-pat"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveRunner(context.Background(), removeRef()); err != nil {
		t.Fatal(err)
	}
	_, err = c.ListRunners(context.Background(), org)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.RetryAt.Equal(reset) || rl.Secondary {
		t.Fatalf("err = %v, want a primary RateLimitError until %s", err, reset)
	}
	if got := c.RateLimits()[0]; got.Remaining != 0 || got.Limit != 5000 || !got.Reset.Equal(reset) {
		t.Errorf("recorded rate limit %+v", got)
	}
	if calls := c.Calls(); calls.Total != 1 || calls.ByOperation[rest.OpRemoveRunner] != 1 {
		t.Errorf("calls %+v: a refused call must not count", calls)
	}
}

// Secondary limits without a retry-after back off exponentially from a
// minute while they keep coming, and a success ends the run.
func TestSecondaryBackoffGrows(t *testing.T) {
	clock := testclock.At(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"message":"You have exceeded a secondary rate limit"}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c, err := rest.New(rest.Options{BaseURL: srv.URL, Token: "test-pat", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	waits := []time.Duration{}
	for range 3 {
		err := c.RemoveRunner(context.Background(), removeRef())
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || !rl.Secondary {
			t.Fatalf("err = %v", err)
		}
		waits = append(waits, rl.RetryAt.Sub(clock.Now()))
		clock.AdvanceTo(rl.RetryAt) // the wait is over
	}
	if waits[0] != time.Minute || waits[1] != 2*time.Minute || waits[2] != 4*time.Minute {
		t.Fatalf("waits %v, want 1m, 2m, 4m", waits)
	}
	fail.Store(false)
	if err := c.RemoveRunner(context.Background(), removeRef()); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	var rl *github.RateLimitError
	if err := c.RemoveRunner(context.Background(), removeRef()); !errors.As(err, &rl) || rl.RetryAt.Sub(clock.Now()) != time.Minute {
		t.Fatalf("after a success the backoff should restart at 1m: %v", err)
	}
}
