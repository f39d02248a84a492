// Command forcedelete is the ForceDeleteFunction, invoked directly by an
// operator with {"name": "...", "force": true}. The logic is in
// internal/lambdafn.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

func main() {
	fn := lambdafn.NewFunction(lambdafn.RoleForceDelete, lambdafn.FromEnvironment(lambdafn.RoleForceDelete), nil)
	lambda.Start(fn.HandleForceDelete)
}
