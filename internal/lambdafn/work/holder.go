package work

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runfleet/runfleet/internal/engine"
)

// asInvocation names the Lambda invocation of ctx as the holder of the
// claims made under it (issue #32): "lambda-<request id>". An invocation
// keeps no liveness record; its claims end at its deadline (the claim's
// ClaimUntil), after which the reconciler function takes them over
// (engine.Engine.TakeOverDeadWork). Without a request id (a test calling
// the handler directly) ctx is returned as it is.
func asInvocation(ctx context.Context) context.Context {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.AwsRequestID == "" {
		return ctx
	}
	id := strings.NewReplacer("@", "-", "#", "-").Replace(lc.AwsRequestID)
	return engine.WithHolder(ctx, "lambda-"+id, nil)
}
