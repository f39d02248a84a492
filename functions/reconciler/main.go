// Command reconciler is the ReconcilerFunction, run by an EventBridge
// schedule. It builds the engine with the GitHub client and a provider per
// pool. The logic is in internal/lambdafn/work.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn/work"
)

func main() { lambda.Start(work.Reconciler()) }
