// Command webhook is the WebhookFunction: GitHub's workflow_job deliveries
// through a Lambda Function URL. It builds only the webhook intake over the
// engine's ledger (engine.Ledger: store, queue, pools): no GitHub client
// and no provider. The logic is in
// internal/lambdafn.
package main

import "github.com/runfleet/runfleet/internal/lambdafn"

func main() { lambdafn.Start(lambdafn.RoleWebhook, lambdafn.Webhook()) }
