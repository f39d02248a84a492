package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB Local serialises transactions and never reports contention, so
// the classification of the real service's contention errors is checked on
// the error values the SDK would return.
func cancelled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return fmt.Errorf("operation error DynamoDB: TransactWriteItems: %w", &types.TransactionCanceledException{CancellationReasons: reasons})
}

func TestContendedClassifiesCancellations(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{cancelled("None", "TransactionConflict"), true},
		{cancelled("ThrottlingError", "None"), true},
		{cancelled("ConditionalCheckFailed", "TransactionConflict"), false},
		{cancelled("None", "ConditionalCheckFailed"), false},
		{cancelled("ValidationError", "None"), false},
		{fmt.Errorf("put: %w", &types.TransactionConflictException{}), true},
		{fmt.Errorf("put: %w", &types.ConditionalCheckFailedException{}), false},
		{errors.New("connection reset"), false},
	} {
		if got := contended(c.err); got != c.want {
			t.Errorf("contended(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryContentionRetriesUntilDecided(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := retryContention(ctx, func() error {
		calls++
		if calls < 3 {
			return cancelled("None", "TransactionConflict")
		}
		return cancelled("None", "ConditionalCheckFailed")
	})
	if failed, ok := conditionFailed(err); !ok || failed[0] || !failed[1] || calls != 3 {
		t.Fatalf("after %d calls: %v", calls, err)
	}

	calls = 0
	err = retryContention(ctx, func() error {
		calls++
		return cancelled("TransactionConflict", "None")
	})
	if !contended(err) || calls != maxContentionAttempts {
		t.Fatalf("gave up after %d calls with %v; want %d calls and the contention error", calls, err, maxContentionAttempts)
	}

	canceledCtx, cancel := context.WithCancel(ctx)
	cancel()
	calls = 0
	err = retryContention(canceledCtx, func() error {
		calls++
		return cancelled("TransactionConflict", "None")
	})
	if calls != 1 || !errors.Is(err, context.Canceled) || !contended(err) {
		t.Fatalf("canceled context: %d calls, %v", calls, err)
	}
}
