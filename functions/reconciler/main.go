// Command reconciler is the ReconcilerFunction, run by an EventBridge
// schedule. The logic is in internal/lambdafn.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

func main() {
	fn := lambdafn.NewFunction(lambdafn.RoleReconciler, lambdafn.FromEnvironment(lambdafn.RoleReconciler), nil)
	lambda.Start(fn.HandleSchedule)
}
