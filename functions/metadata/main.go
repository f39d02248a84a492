// Command metadata is the MetadataFunction: runner bootstrap (instance
// tokens, JIT credentials, status callbacks) behind its own Lambda
// Function URL. The logic is in internal/lambdafn and internal/metadata.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

func main() {
	fn := lambdafn.NewFunction(lambdafn.RoleMetadata, lambdafn.FromEnvironment(lambdafn.RoleMetadata), nil)
	lambda.Start(fn.HandleMetadata)
}
