package serve

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/internal/wiring"
)

// readCounter is an engine whose read of the work left in flight is
// counted.
type readCounter struct {
	reads int
	err   error
}

func (r *readCounter) LeftInFlight(context.Context) (*engine.Recovery, error) {
	r.reads++
	return &engine.Recovery{}, r.err
}

// What a crashed predecessor left in flight is read before serve starts a
// worker (FINDINGS O4): a read made beside the workers also finds their
// fresh claims, and the recovery then retries a create under its live
// worker — two machines of one instance. recoverBeside must have read
// when it returns, whatever the recovery does after.
func TestWhatIsInFlightIsReadBeforeAnyWorkerStarts(t *testing.T) {
	for _, readErr := range []error{nil, errors.New("store down")} {
		eng := &readCounter{err: readErr}
		var logs testlog.Buffer
		var wg sync.WaitGroup
		recoverBeside(context.Background(), &wg, eng, logs.Logger(slog.LevelDebug))
		if eng.reads != 1 {
			t.Fatalf("reads when recoverBeside returned = %d, want 1 (read error %v)", eng.reads, readErr)
		}
		wg.Wait()
		if readErr != nil && !strings.Contains(logs.String(), "reading the work left in flight failed") {
			t.Fatalf("a failed read is not logged: %s", logs.String())
		}
	}
}

// After a kill -9 on a store serve owns alone, the dead process's listener
// lease is freed at once rather than waited out, and a lease nobody holds
// is left as it is.
func TestTheListenerLeaseOfADeadProcessIsFreedAtStart(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	pools := []wiring.ScaleSetPool{{Pool: config.Pool{Name: "held"}}, {Pool: config.Pool{Name: "never-held"}}}
	if _, err := st.AcquireLease(ctx, listener.LeaseName("held"), "dead-process", time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	freeDeadListenerLeases(ctx, st, pools, logs.Logger(slog.LevelDebug))
	for _, p := range pools {
		cur, err := st.GetLease(ctx, listener.LeaseName(p.Pool.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !cur.Free(time.Now()) {
			t.Errorf("lease of pool %s still held by %q until %s", p.Pool.Name, cur.Holder, cur.ExpiresAt)
		}
	}
	if n := len(logs.WithMessage(t, "freed the listener lease")); n != 1 {
		t.Errorf("%d lines say a lease was freed, want 1: %s", n, logs.String())
	}
}
