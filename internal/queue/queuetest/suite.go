// Package queuetest is the one contract suite every queue.Queue adapter must
// pass. It runs against real backends (a bbolt file, a moto SQS server) and
// uses short, whole-second delays and visibility timeouts so that it also fits
// SQS's one-second granularity while staying fast: its subtests run in
// parallel, each on a queue of its own.
package queuetest

import (
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
)

// Options tell the adapter's factory how to configure the queue a subtest
// gets.
type Options struct {
	// MaxReceives dead-letters a message on the first receive attempt after
	// it has been delivered MaxReceives times; 0 never dead-letters.
	MaxReceives int
}

// NewQueue builds a fresh, empty queue that no other subtest uses, and
// arranges (t.Cleanup) to release it.
type NewQueue func(t *testing.T, opts Options) queue.Queue

// Capability declares a guarantee beyond the port's minimum that a backend
// offers, so the suite also checks it.
type Capability int

const (
	// StaleReceiptKeepsMessage: acknowledging with the receipt of an earlier
	// delivery leaves a redelivered message queued. Real SQS documents this;
	// moto deletes the message whichever receipt is used.
	StaleReceiptKeepsMessage Capability = iota + 1
)

type contractTest struct {
	name string
	run  func(t *testing.T, newQueue NewQueue)
	// needs names a capability without which the test does not apply.
	needs Capability
}

var contractTests = []contractTest{
	{name: "RoundTrip", run: roundTrip},
	{name: "BinaryBodyRoundTrips", run: binaryBodyRoundTrips},
	{name: "AckRemovesForGood", run: ackRemovesForGood},
	{name: "DelayHidesUntilDue", run: delayHidesUntilDue},
	{name: "VisibilityTimeoutRedelivers", run: visibilityTimeoutRedelivers},
	{name: "StaleReceiptDoesNotRemove", run: staleReceiptDoesNotRemove, needs: StaleReceiptKeepsMessage},
	{name: "DeadLetterAfterMaxReceives", run: deadLetterAfterMaxReceives},
	{name: "WaitReturnsWhenMessageArrives", run: waitReturnsWhenMessageArrives},
	{name: "WaitTimesOutEmpty", run: waitTimesOutEmpty},
	{name: "CanceledContextEndsWait", run: canceledContextEndsWait},
	{name: "MaxIsRespected", run: maxIsRespected},
	{name: "ConcurrentSendersAndReceiversLoseNothing", run: concurrentSendersAndReceiversLoseNothing},
}

// Run runs the contract against queues built by newQueue. caps lists the
// optional guarantees the backend claims.
//
// The subtests mostly sleep through delays and visibility timeouts, so they
// all run at once, each on its own goroutine, rather than through t.Parallel,
// which -parallel would cap at GOMAXPROCS (2 on CI).
func Run(t *testing.T, newQueue NewQueue, caps ...Capability) {
	has := map[Capability]bool{}
	for _, c := range caps {
		has[c] = true
	}
	var wg sync.WaitGroup
	for _, ct := range contractTests {
		if ct.needs != 0 && !has[ct.needs] {
			continue
		}
		wg.Go(func() {
			t.Run(ct.name, func(t *testing.T) { ct.run(t, newQueue) })
		})
	}
	wg.Wait()
}
