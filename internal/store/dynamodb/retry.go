package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Cancellation reason codes DynamoDB puts in a TransactionCanceledException,
// one per item of the transaction ("None" for items that were fine).
const (
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonConflict        = "TransactionConflict"
	reasonThrottled       = "ThrottlingError"
	reasonOverCapacity    = "ProvisionedThroughputExceeded"
)

// maxContentionAttempts bounds retries of writes that lost to a concurrent
// transaction. Every create and delete in a pool updates the pool's counter,
// so under a burst of webhooks these collisions are expected, not faults.
const maxContentionAttempts = 8

// retryContention runs write until it returns something other than a
// contention error (see contended), backing off with full jitter between
// attempts. write must build its request afresh each time (new timestamps,
// new idempotency token), because a contended attempt wrote nothing.
func retryContention(ctx context.Context, write func() error) error {
	for attempt := 1; ; attempt++ {
		err := write()
		if err == nil || !contended(err) || attempt == maxContentionAttempts {
			return err
		}
		if werr := sleepBackoff(ctx, attempt); werr != nil {
			return fmt.Errorf("%w (gave up retrying: %w)", err, werr)
		}
	}
}

// sleepBackoff waits before retry number attempt+1: full jitter over an
// exponential window (10 ms, 20 ms, … capped at 1 s), so writers that
// collided once do not collide again in lockstep.
func sleepBackoff(ctx context.Context, attempt int) error {
	window := min(10*time.Millisecond<<min(attempt-1, 10), time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Millisecond + rand.N(window)):
		return nil
	}
}

// contended reports whether err means "another request was writing the same
// item at that moment; nothing was written; try again". The SDK does not
// retry these itself. A transaction cancelled because a condition failed is
// a decision, not contention, even if another of its items also collided.
func contended(err error) bool {
	if _, ok := errors.AsType[*types.TransactionConflictException](err); ok {
		return true
	}
	canceled, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return false
	}
	retryable := false
	for _, r := range canceled.CancellationReasons {
		switch reasonCode(r) {
		case reasonConditionFailed:
			return false
		case reasonConflict, reasonThrottled, reasonOverCapacity:
			retryable = true
		}
	}
	return retryable
}

func reasonCode(r types.CancellationReason) string {
	if r.Code == nil {
		return ""
	}
	return *r.Code
}

// conditionFailed returns, for each item of a cancelled transaction, whether
// its own condition failed; ok is false if err is not such a cancellation.
func conditionFailed(err error) (failed []bool, ok bool) {
	canceled, isCanceled := errors.AsType[*types.TransactionCanceledException](err)
	if !isCanceled {
		return nil, false
	}
	failed = make([]bool, len(canceled.CancellationReasons))
	for i, r := range canceled.CancellationReasons {
		failed[i] = reasonCode(r) == reasonConditionFailed
		ok = ok || failed[i]
	}
	return failed, ok
}
