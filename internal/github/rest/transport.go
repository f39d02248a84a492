package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Operations, as counted by Calls. Each names what a request was for; a
// runfleet operation may send several (a JIT config after a 409 lists and
// removes the stale runner first).
const (
	OpGenerateJITConfig = "GenerateJITConfig"
	OpRemoveRunner      = "RemoveRunner"
	// OpCreateRegistrationToken mints the registration token a scale-set
	// client registers with (about once an hour per owner).
	OpCreateRegistrationToken = "CreateRegistrationToken"
	OpListRunners             = "ListRunners"
	OpListRunnerGroups        = "ListRunnerGroups"
	OpListRunnerDownloads     = "ListRunnerDownloads"
	OpGetJob                  = "GetJob"
	OpRerunJob                = "RerunJob"
	OpListRunJobs             = "ListRunJobs"
	OpFindInstallation        = "FindInstallation"
	OpCreateInstallationToken = "CreateInstallationToken"
	// OpListDeliveries and OpGetDelivery read the App's webhook delivery
	// log, as the App (its JWT): the App's budget, not an installation's.
	OpListDeliveries = "ListDeliveries"
	OpGetDelivery    = "GetDelivery"
	// OpOther: a request made without an operation label.
	OpOther = "other"
)

// Operations lists every operation, so an exporter can show each at 0.
var Operations = []string{
	OpGenerateJITConfig, OpRemoveRunner, OpCreateRegistrationToken, OpListRunners, OpListRunnerGroups, OpListRunnerDownloads,
	OpGetJob, OpFindInstallation, OpCreateInstallationToken, OpListDeliveries, OpGetDelivery, OpOther,
}

type opKey struct{}

// withOp labels the requests made under ctx for the call counters.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

func opOf(ctx context.Context) string {
	if op, ok := ctx.Value(opKey{}).(string); ok {
		return op
	}
	return OpOther
}

// observer sits under authentication, just above the network: it sees
// exactly the requests that reach GitHub (go-github refuses some locally
// while a rate limit lasts; those cost nothing and are not counted), counts
// them by operation and answer, and records the rate-limit headers of each
// answer.
type observer struct {
	next           http.RoundTripper
	telemetry      *telemetry
	installationID int64
	log            *slog.Logger
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	if isTokenRequest(req) {
		// ghinstallation mints installation tokens under the caller's
		// context; count them apart from the call that needed one.
		resp, err := o.next.RoundTrip(req)
		o.telemetry.count(OpCreateInstallationToken, callResult(resp, err))
		return resp, err
	}
	resp, err := o.next.RoundTrip(req)
	o.telemetry.count(opOf(req.Context()), callResult(resp, err))
	if err == nil {
		if rate, ok := parseRateHeaders(resp.Header); ok {
			o.telemetry.recordRate(o.installationID, rate)
			o.log.Debug("github rate limit", "installation_id", o.installationID,
				"remaining", rate.Remaining, "limit", rate.Limit, "reset", rate.Reset.UTC().Format(time.RFC3339))
		}
	}
	return resp, err
}

// callResult is how GitHub answered one request (CallOK, CallError,
// CallRateLimited), read from the answer alone: the classification of
// errors (classify) needs the body, which is not read here.
func callResult(resp *http.Response, err error) string {
	switch {
	case err != nil || resp == nil:
		return CallError
	case resp.StatusCode == http.StatusTooManyRequests,
		resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""):
		return CallRateLimited
	case resp.StatusCode >= 400:
		return CallError
	default:
		return CallOK
	}
}

// isTokenRequest: POST /app/installations/{id}/access_tokens.
func isTokenRequest(req *http.Request) bool {
	return req.Method == http.MethodPost &&
		strings.Contains(req.URL.Path, "/app/installations/") &&
		strings.HasSuffix(req.URL.Path, "/access_tokens")
}

// parseRateHeaders reads x-ratelimit-{limit,remaining,reset}; ok is false
// when the answer carries none.
func parseRateHeaders(h http.Header) (RateLimit, bool) {
	remaining, err := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if err != nil {
		return RateLimit{}, false
	}
	rate := RateLimit{Remaining: remaining}
	rate.Limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && reset > 0 {
		rate.Reset = time.Unix(reset, 0)
	}
	return rate, true
}
