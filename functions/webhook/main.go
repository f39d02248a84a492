// Command webhook is the WebhookFunction: GitHub's workflow_job deliveries
// through a Lambda Function URL. The logic is in internal/lambdafn.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

func main() {
	fn := lambdafn.NewFunction(lambdafn.RoleWebhook, lambdafn.FromEnvironment(lambdafn.RoleWebhook), nil)
	lambda.Start(fn.HandleWebhook)
}
