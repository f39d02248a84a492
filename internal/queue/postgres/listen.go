package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// notices tells waiting receivers that a message was committed: next
// returns a channel that is closed at the next notification.
type notices struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotices() *notices { return &notices{ch: make(chan struct{})} }

func (n *notices) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notices) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}

// reconnectDelay paces the listener's reconnects while the database is
// unreachable; receivers meanwhile look every maxSleep.
const reconnectDelay = time.Second

// listen holds a connection of its own (not one of the pool's, which
// LISTEN would pin) listening on the queue channel, and wakes the
// receivers at every notification for this queue, until ctx ends.
func (q *Queue) listen(ctx context.Context) {
	for ctx.Err() == nil {
		q.listenOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(reconnectDelay):
		}
	}
}

// listenOnce listens on one connection until it fails or ctx ends.
func (q *Queue) listenOnce(ctx context.Context) {
	conn, err := pgx.ConnectConfig(ctx, q.pool.Config().ConnConfig.Copy())
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return
	}
	// Whatever was committed while no one listened is looked at again.
	q.notices.broadcast()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		if n.Payload == q.opts.Name {
			q.notices.broadcast()
		}
	}
}
