package lambdafn_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// callerKey marks a context with who makes the AWS calls under it: a
// function ("webhook", "worker") or the event source mapping ("esm"). The
// meter counts only marked calls, so the test's own reads and set-up are
// never billed to a job.
type callerKey struct{}

func asCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// awsMeter counts AWS requests as SDK middleware on the real clients, and
// asks DynamoDB for the capacity each request consumed.
type awsMeter struct {
	mu       sync.Mutex
	calls    map[string]int     // "caller Service.Operation" → requests
	capacity map[string]float64 // "caller Service.Operation" → capacity units (table + indexes)
	indexWCU float64            // of which spent on the live index
	missing  int                // DynamoDB responses without ConsumedCapacity
	handlers map[string][]time.Duration
}

func newAWSMeter() *awsMeter {
	m := &awsMeter{}
	m.reset()
	return m
}

func (m *awsMeter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.capacity, m.indexWCU, m.missing = map[string]int{}, map[string]float64{}, 0, 0
	m.handlers = map[string][]time.Duration{}
}

func (m *awsMeter) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("runfleetBenchMeter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			caller, ok := ctx.Value(callerKey{}).(string)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			askForCapacity(in.Parameters)
			out, md, err := next.HandleInitialize(ctx, in)
			key := fmt.Sprintf("%s %s.%s", caller, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx))
			consumed, isDynamo := consumedCapacity(out.Result)
			m.mu.Lock()
			defer m.mu.Unlock()
			m.calls[key]++
			if isDynamo && err == nil {
				if consumed == nil {
					m.missing++
				}
				for _, c := range consumed {
					if c.CapacityUnits != nil {
						m.capacity[key] += *c.CapacityUnits
					}
					for _, gsi := range c.GlobalSecondaryIndexes {
						if gsi.CapacityUnits != nil {
							m.indexWCU += *gsi.CapacityUnits
						}
					}
				}
			}
			return out, md, err
		}), middleware.After)
}

// askForCapacity sets ReturnConsumedCapacity on DynamoDB requests; only the
// benchmark does this, through this middleware, never the store itself.
func askForCapacity(params any) {
	const indexes = ddbtypes.ReturnConsumedCapacityIndexes
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = indexes
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = indexes
	}
}

func consumedCapacity(result any) ([]ddbtypes.ConsumedCapacity, bool) {
	one := func(c *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []ddbtypes.ConsumedCapacity{*c}
	}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity), true
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity), true
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity), true
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity), true
	case *dynamodb.TransactWriteItemsOutput:
		return out.ConsumedCapacity, true
	case *dynamodb.BatchGetItemOutput:
		return out.ConsumedCapacity, true
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity), true
	}
	return nil, false
}

// handler records one handler invocation and how long it took.
func (m *awsMeter) handler(kind string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[kind] = append(m.handlers[kind], took)
}

// meterSnapshot is what the meter saw, for reporting.
type meterSnapshot struct {
	calls    map[string]int
	capacity map[string]float64
	indexWCU float64
	missing  int
	handlers map[string][]time.Duration
}

func (m *awsMeter) snapshot() meterSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := meterSnapshot{calls: map[string]int{}, capacity: map[string]float64{}, indexWCU: m.indexWCU, missing: m.missing, handlers: map[string][]time.Duration{}}
	for k, v := range m.calls {
		s.calls[k] = v
	}
	for k, v := range m.capacity {
		s.capacity[k] = v
	}
	for k, v := range m.handlers {
		s.handlers[k] = append([]time.Duration(nil), v...)
	}
	return s
}

// sum adds the requests (or capacity) of keys matching every part.
func sumWhere[V int | float64](m map[string]V, parts ...string) V {
	var total V
	for k, v := range m {
		match := true
		for _, p := range parts {
			match = match && strings.Contains(k, p)
		}
		if match {
			total += v
		}
	}
	return total
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
