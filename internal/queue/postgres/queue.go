// Package postgres is a durable work queue in a PostgreSQL table, for
// `runfleet serve` replicas that share one database: delays, visibility
// timeouts, receive counts and dead letters, as SQS has them.
//
// Receivers claim due messages with SELECT … FOR UPDATE SKIP LOCKED, so
// concurrent receivers (in one process or many) never wait on each other
// nor take the same message. A Receive with nothing due waits without
// polling: an insert trigger NOTIFYs the queue's channel when a message
// is committed (a Send, or the store's outbox), and otherwise the waiter
// sleeps until the earliest message becomes due (a delay ending, a
// visibility timeout running out).
//
// Unlike embedded mode's queue, opening the queue releases nothing: a
// message another replica is working on stays hidden until its
// visibility timeout, which is what recovers the work of a replica that
// died.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runfleet/runfleet/internal/pgmigrate"
	"github.com/runfleet/runfleet/internal/queue"
)

// Options configure a queue.
type Options struct {
	// Name tells apart queues kept in one table (default "work").
	Name string
	// MaxReceives dead-letters a message on the first receive attempt after
	// it was delivered MaxReceives times. 0 never dead-letters.
	MaxReceives int
	// DefaultVisibility applies when ReceiveOptions.Visibility is 0.
	// Default 30 s, as SQS.
	DefaultVisibility time.Duration
	// Now, when set, is the clock of every due-time and visibility
	// decision, for a simulation on virtual time. By default the
	// database's clock decides, so replicas whose clocks disagree still
	// agree on what is due. Blocking in Receive is real time either way.
	Now func() time.Time
}

const (
	defaultName       = "work"
	defaultVisibility = 30 * time.Second
	// maxBatch matches SQS so code written against one fits the other.
	maxBatch = 10
)

// ErrInvalidReceipt is matched (errors.Is) by Ack's error for a receipt
// this queue never issued.
var ErrInvalidReceipt = errors.New("postgres queue: invalid receipt")

// Queue is a queue.Queue and queue.DeadLetterer over a PostgreSQL table.
// It is safe for concurrent use, and any number of processes may use the
// same queue.
type Queue struct {
	pool     *pgxpool.Pool
	ownsPool bool
	opts     Options
	notices  *notices

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	// stopListening ends the listener; listening is closed once it has.
	stopListening context.CancelFunc
	listening     chan struct{}
}

var (
	_ queue.Queue        = (*Queue)(nil)
	_ queue.DeadLetterer = (*Queue)(nil)
)

// Open connects to dsn, brings the queue's table up to date and returns
// the queue; Close closes the connection pool.
func Open(ctx context.Context, dsn string, opts Options) (*Queue, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, errors.New("postgres queue: the DSN cannot be parsed or used")
	}
	q, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	q.ownsPool = true
	return q, nil
}

// New is Open over a pool the caller owns and closes after the queue
// (the store's, for the outbox).
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Queue, error) {
	if opts.MaxReceives < 0 {
		return nil, fmt.Errorf("postgres queue: MaxReceives %d is negative", opts.MaxReceives)
	}
	if opts.Name == "" {
		opts.Name = defaultName
	}
	if opts.DefaultVisibility <= 0 {
		opts.DefaultVisibility = defaultVisibility
	}
	if _, err := pgmigrate.Apply(ctx, pool, schemaComponent, migrations); err != nil {
		return nil, fmt.Errorf("postgres queue: prepare the queue's schema: %w", err)
	}
	listenCtx, stop := context.WithCancel(context.Background())
	q := &Queue{
		pool: pool, opts: opts, notices: newNotices(),
		closing: make(chan struct{}), stopListening: stop, listening: make(chan struct{}),
	}
	go func() {
		defer close(q.listening)
		q.listen(listenCtx)
	}()
	return q, nil
}

// Close ends blocked receives (they return queue.ErrClosed) and the
// listener, and closes the pool if Open made it. Messages stay queued.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.closing)
	q.mu.Unlock()
	q.stopListening()
	<-q.listening
	if q.ownsPool {
		q.pool.Close()
	}
	return nil
}

func (q *Queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// clock is the $now of the queue's statements: nil lets the database's
// clock decide (nowSQL).
func (q *Queue) clock() any {
	if q.opts.Now == nil {
		return nil
	}
	return q.opts.Now()
}

// nowSQL is "now" in the queue's statements, whose second parameter is
// clock().
const nowSQL = "coalesce($2::timestamptz, clock_timestamp())"

// micros is d in whole microseconds, PostgreSQL's time resolution,
// rounded up so that a delay is never cut short.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
