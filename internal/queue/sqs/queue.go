// Package sqs is the queue.Queue adapter over Amazon SQS (a standard queue
// with a redrive policy to a dead-letter queue).
//
// SQS caps DelaySeconds at 15 minutes. Longer delays are chained: the message
// goes out with the longest delay SQS allows and carries its real due time in
// a message attribute; whoever receives it early — Receive here, or a Lambda
// worker through RequeueIfNotDue — sends it on for the time remaining and
// deletes the early copy, without handing it to the application.
package sqs

import (
	"log/slog"
	"sync"
	"time"

	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runfleet/runfleet/internal/queue"
)

const (
	// MaxDelay is the longest DelaySeconds SQS accepts.
	MaxDelay = 15 * time.Minute
	// maxVisibility and maxWait are SQS's limits on a receive.
	maxVisibility = 12 * time.Hour
	maxWait       = 20 * time.Second
	maxBatch      = 10
)

// Queue is a queue.Queue and queue.DeadLetterer over one SQS queue.
type Queue struct {
	client   *sqsapi.Client
	url      string
	maxDelay time.Duration
	log      *slog.Logger

	// dlqURL is the dead-letter queue, configured or found from the redrive
	// policy on first use.
	dlqMu  sync.Mutex
	dlqURL string
}

var (
	_ queue.Queue        = (*Queue)(nil)
	_ queue.DeadLetterer = (*Queue)(nil)
)

// Option configures a Queue.
type Option func(*Queue)

// WithDeadLetterQueue names the dead-letter queue DeadLetters reads. Without
// it, DeadLetters finds the queue from the main queue's RedrivePolicy.
func WithDeadLetterQueue(url string) Option {
	return func(q *Queue) { q.dlqURL = url }
}

// WithMaxDelay lowers the longest delay sent to SQS in one hop (whole
// seconds, 1 s to MaxDelay), so tests can exercise delay chaining quickly.
func WithMaxDelay(d time.Duration) Option {
	return func(q *Queue) { q.maxDelay = min(max(d.Truncate(time.Second), time.Second), MaxDelay) }
}

// WithLogger receives warnings about chained delays that could not be sent
// on (the message is then retried after its visibility timeout).
func WithLogger(log *slog.Logger) Option {
	return func(q *Queue) { q.log = log }
}

// New returns the queue at queueURL.
func New(client *sqsapi.Client, queueURL string, opts ...Option) *Queue {
	q := &Queue{client: client, url: queueURL, maxDelay: MaxDelay, log: slog.Default()}
	for _, opt := range opts {
		opt(q)
	}
	return q
}

// URL is the queue's URL.
func (q *Queue) URL() string { return q.url }

// wholeSeconds rounds d up: SQS counts delays, waits and visibility in whole
// seconds, and rounding down would deliver early or give up waiting early.
func wholeSeconds(d time.Duration, limit time.Duration) int32 {
	d = min(max(d, 0), limit)
	return int32((d + time.Second - 1) / time.Second)
}
