// Package scaleset is a client for GitHub's runner scale-set protocol: the
// Actions service a scale set long-polls for its jobs. It is the client
// layer of runfleet's scale-set intake; the listener that feeds the engine
// is built on it and is not here.
//
// The protocol, as implemented (docs/scale-sets.md has the whole of it):
//
//   - Registration: a registration token from the REST API (through a
//     RegistrationTokenSource the caller supplies) is exchanged at
//     POST {api}/actions/runner-registration for the Actions service URL
//     and an admin token, which every scale-set call carries.
//   - Scale sets: runner group by name, get/create/update/delete a scale
//     set by name in that group.
//   - Message sessions: one per scale set. The session's queue URL and
//     queue token serve the long poll (GetMessage), the acknowledgement
//     (DeleteMessage) and, where the server expects it, AcquireJobs.
//   - Runners: a JIT configuration generated through the scale set, get and
//     remove a runner.
//
// Every failure GitHub documents is a typed error (errors.go): match kinds
// with errors.Is (ErrSessionConflict, ErrQueueTokenExpired, ...) and read
// details with errors.As into *Error or *github.RateLimitError. An error
// of the RegistrationTokenSource comes back wrapped, unchanged (a REST
// rate limit stays a *github.RateLimitError).
//
// What a listener must do with each error:
//
//   - ErrSessionConflict (409) on CreateSession: another session holds the
//     scale set — a live replica, or this listener's own session left by a
//     crash. Resume the stored session id if there is one (ResumeSession),
//     else wait with backoff until GitHub expires the stale one; never exit
//     and restart in a loop.
//   - ErrQueueTokenExpired: the client already refreshed the session once
//     and retried; seeing it means the refresh did not help. Resume or
//     re-create the session.
//   - ErrSessionNotFound (404 on refresh or delete): GitHub dropped the
//     session. Create a new one in place and keep lastMessageId; a delete
//     that meets it is done.
//   - ErrSessionExpired (on delete): the session is already gone: done.
//   - ErrScaleSetNotFound: GitHub deleted the scale set (inactivity,
//     incidents). Ensure it again (EnsureScaleSet), then a new session.
//   - ErrUnauthorized: the admin token was refused even after one
//     re-registration; check the App's permissions or the token.
//   - ErrRunnerBusy on RemoveRunner: the runner is running a job — never
//     destroy its machine (it also matches github.ErrRunnerBusy).
//   - ErrRunnerNotFound on RemoveRunner: already gone, which is success.
//   - *github.RateLimitError: wait until RetryAt; not a failed attempt.
//   - ErrServer (5xx), ErrTransport: retry with backoff; nothing changed
//     on the caller's side.
//   - ErrBadResponse: GitHub answered something this client cannot use
//     (an oversized body, an empty queue URL); treat like ErrServer.
//
// A listener persists the session id and lastMessageId, passes
// lastMessageId on every GetMessage, acknowledges a message only once its
// effects are durable, treats redelivered and duplicated messages as
// normal (message ids and runner request ids are the idempotency keys),
// scales on Statistics.TotalAssignedJobs rather than on message counts,
// and deletes its session on every exit.
//
// The client retries nothing on its own except what the protocol asks for:
// a queue call answered 401 refreshes the session and is sent once more,
// and an Actions-service call answered 401 re-registers and is sent once
// more. Backoff belongs to the caller, who knows its deadlines and lease.
package scaleset
