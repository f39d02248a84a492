// Package lambdafn holds runfleet's AWS Lambda functions as plain Go: the
// handlers (webhook, worker, forcedelete, reconciler, metadata) and the wiring they
// share — read the environment, fetch the config from SSM and the secrets
// from Secrets Manager, build the DynamoDB store, the SQS queue, the
// providers and the GitHub client, and run the engine over them.
//
// functions/<name>/main.go only picks a Role and hands the matching handler
// method of a Function to lambda.Start. A Function builds its App once per
// cold start, on the first invocation, and reuses it while the execution
// environment stays warm; a failed build is reported on that invocation and
// tried again on the next, never cached.
//
// Every handler takes and returns the event types Lambda really sends, so
// tests call them with real event JSON and real AWS-protocol servers.
package lambdafn
