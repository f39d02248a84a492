// Command worker is the WorkerFunction: the work queue's SQS event source
// mapping (ReportBatchItemFailures). The logic is in internal/lambdafn.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

func main() {
	fn := lambdafn.NewFunction(lambdafn.RoleWorker, lambdafn.FromEnvironment(lambdafn.RoleWorker), nil)
	lambda.Start(fn.HandleSQS)
}
