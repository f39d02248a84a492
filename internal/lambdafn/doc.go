// Package lambdafn holds what runfleet's six AWS Lambda functions share —
// read the environment, fetch the config from SSM and the secrets from
// Secrets Manager, build the DynamoDB store and the SQS queue, build once
// per execution environment (Lazy) — and the two functions that need
// nothing more: the webhook (Webhook: the engine's intake alone) and runner
// bootstrap (Metadata). The worker, the reconciler and the operator's
// delete, which also need the GitHub client and the providers, are in
// package work, so the webhook function links neither.
//
// functions/<name>/main.go hands one of them to Start, which checks the
// function's environment (an incomplete one is the runtime's init error,
// EnvError) before lambda.Start. A function builds its app on the first
// invocation and reuses it while the execution environment stays warm; a
// failed build is reported on that invocation and tried again on the next,
// never cached.
//
// Every handler takes and returns the event types Lambda really sends, so
// tests call them with real event JSON and real AWS-protocol servers.
package lambdafn
