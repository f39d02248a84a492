// Package scalesettest is a fake of GitHub's Actions service for the
// runner scale-set protocol, built to the public facts in
// docs/scale-sets.md: registration, runner groups, scale sets, message
// sessions, the long-polled message queue, job acquisition, JIT runners
// and runner removal, over a real HTTP server (httptest).
//
// Jobs are driven by the test (QueueJob, StartJob, CompleteJob,
// CancelAssignment) and delivered as the service delivers them. Faults
// are switched on per test, each documented where it is defined
// (faults.go): a stale session that holds the scale set until it expires,
// expired queue and admin tokens, a dropped session (refresh 404), 5xx,
// rate limits and slow answers, empty polls (202), messages delivered
// twice or never acknowledged, GitHub's re-assignment of a job no runner
// took, and a scale set deleted server-side. Every call is recorded for
// assertions (Calls, Count).
//
// Where the facts are silent, the fake makes a choice and says so in a
// comment marked "guess": a test passing here proves the client follows
// the facts, not that GitHub behaves as guessed.
package scalesettest
