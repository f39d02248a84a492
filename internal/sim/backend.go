package sim

import (
	"fmt"
	"path/filepath"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Backend opens the state a runfleet process finds at start. Everything it
// returns is real: the simulation only wraps it.
type Backend interface {
	Open(clock *testclock.Clock) (State, error)
	// RealTime reports whether the queue's delays and visibility timeouts
	// pass in real time (SQS) rather than on the virtual clock.
	RealTime() bool
}

// State is one process's view of the store and the queue, and how to let
// go of them when the process dies.
type State struct {
	Store store.Store
	Queue queue.Queue
	Close func() error
}

// MaxReceives is serve's default: a message received this often is
// dead-lettered, and what it asked for is the reconciler's to redo.
const MaxReceives = 10

// BoltBackend is embedded mode's state: one bbolt file holding the store
// and the queue (bolt.OpenWithQueue), on the virtual clock, without fsync —
// a process crash keeps what the OS has been handed, which is all a
// simulated crash needs, and skipping fsync is what makes a million
// lifecycles affordable.
type BoltBackend struct {
	Dir string
}

// Open opens (or reopens, after a crash) the state file.
func (b BoltBackend) Open(clock *testclock.Clock) (State, error) {
	st, err := bolt.OpenWithQueue(filepath.Join(b.Dir, "state.db"),
		local.Options{Now: clock.Now, MaxReceives: MaxReceives},
		bolt.WithNoSync(), bolt.WithClock(clock.Now))
	if err != nil {
		return State{}, fmt.Errorf("sim: open bolt state: %w", err)
	}
	return State{Store: st, Queue: st.Queue(), Close: st.Close}, nil
}

// RealTime is false: the local queue runs on the virtual clock.
func (BoltBackend) RealTime() bool { return false }
