package engine_test

import (
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

func queueOpts(wait time.Duration) queue.ReceiveOptions {
	return queue.ReceiveOptions{Max: 10, Visibility: 5 * time.Second, Wait: wait}
}
