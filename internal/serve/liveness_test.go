package serve

import (
	"context"
	"log/slog"
	"testing"
)

// fakeLife is a replica's liveness as the scan sees it.
type fakeLife struct {
	holder string
	alive  context.Context
}

func (l fakeLife) Current() (string, context.Context, bool) {
	return l.holder, l.alive, l.holder != ""
}

// takerSeen records the context each scan ran under, and runs during
// each scan (while it is under way).
type takerSeen struct {
	ctxs   []context.Context
	during func(ctx context.Context)
}

func (k *takerSeen) TakeOverDeadWork(ctx context.Context) (int, error) {
	k.ctxs = append(k.ctxs, ctx)
	if k.during != nil {
		k.during(ctx)
	}
	return 0, ctx.Err()
}

// The scan runs under the replica's current life — the claims it takes
// name that holder, and it stops when the life ends — and not at all
// between lives: a replica whose liveness lapsed must not take over work.
func TestScanRunsUnderTheCurrentLifeOnly(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	k := &takerSeen{}
	scanOnce(context.Background(), k, fakeLife{}, log)
	if len(k.ctxs) != 0 {
		t.Fatalf("scanned between lives")
	}
	alive, end := context.WithCancel(context.Background())
	k.during = func(ctx context.Context) {
		if ctx.Err() != nil {
			t.Errorf("the scan's context ended before its life did: %v", ctx.Err())
		}
		end()
		<-ctx.Done() // the scan ends with its life (a hang here fails the test)
	}
	scanOnce(context.Background(), k, fakeLife{holder: "host-7-ab", alive: alive}, log)
	if len(k.ctxs) != 1 {
		t.Fatalf("%d scans in a life, want 1", len(k.ctxs))
	}
	k.during = nil
	scanOnce(context.Background(), k, nil, log)
	if len(k.ctxs) != 2 {
		t.Fatalf("a replica without liveness does not scan")
	}
}
