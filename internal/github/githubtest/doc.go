// Package githubtest is a fake GitHub REST server for tests: the self-hosted
// runner endpoints (JIT configs, registration tokens, list/get/delete
// runners, runner groups) for
// organizations, repositories and enterprises, workflow job lookup, and the
// App's installation lookup and installation tokens, answering with GitHub's paths, status codes, bodies
// and headers as its published REST description (npm @octokit/openapi)
// states them — the conformance test in this package checks that.
//
// It is built to be driven by the real clients (go-github v57,
// ghinstallation v2): point go-github's BaseURL at URL() (or GHESURL() for a
// GitHub Enterprise Server style base) and ghinstallation's BaseURL at the
// same address without the trailing slash.
//
// Beyond answering, it lets a test play GitHub's side of a runner's life
// (ConnectRunner, StartJob, FinishRunner, SetBusy) and of a job's (AddJob,
// StartJob, FinishJob, and SetJob for any state), inject GitHub's failure
// modes per route (Inject with NotFound, Conflict, Busy, PrimaryRateLimit,
// TooManyRequests, SecondaryRateLimit, ServerError, Forbidden — optionally
// applying the effect while answering the error, as GitHub sometimes does),
// and count the calls a client made (Calls, CallCount).
//
// GitHub's secondary rate limits (points per minute per identity, requests
// in flight, a 60 s penalty that every refused call extends) are modelled
// but off by default, so no test is refused by them unless it asks:
// NewServer(t, WithSecondaryLimits(SecondaryLimits{})) turns them on with
// GitHub's numbers (900 points/min, 100 in flight), and
// SecondaryRefusals counts the calls they refused.
//
// For webhook-driven tests it builds the workflow_job delivery GitHub would
// send for a job's current state (WorkflowJobWebhook, WebhookRequest), sends
// it and keeps GitHub's delivery log of every attempt (SendWorkflowJob,
// Deliveries; WithFailedDeliveries fails a fraction at GitHub's side), served
// at GET /app/hook/deliveries and /app/hook/deliveries/{delivery_id}, and it
// reads GitHub's real example payloads and REST description from the npm
// packages infra/test/install-fixtures.sh installs (WebhookExamples,
// OpenAPIDescriptionPath), failing — never skipping — when they are missing.
package githubtest
