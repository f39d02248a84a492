package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/warm"
)

// keptCursorName is the store cursor that keeps a pool's arrivals past the
// ledger's week (warm.Kept): one small record per pool, on every store.
func keptCursorName(pool string) string { return "warm/arrivals/" + pool }

// keptRules are what the ledger holds and what is kept of it: the ledger
// holds every job queued in the last DeletedRetention; a day is kept an
// hour after it ends, so a delivery recovered late from the App's log
// still counts in it; and the forecast's reach (warmHistory) is kept, with
// a day to spare.
func keptRules(p warm.Params) warm.KeepRules {
	return warm.KeepRules{Ledger: store.DeletedRetention, Settle: time.Hour, Span: warmHistory(p) + warm.Day}
}

// readKept returns the pool's kept arrivals and the cursor they came from
// (to write the next over). A record that cannot be read or decoded is
// logged and read as nothing kept: the forecast reads the ledger alone, as
// a pool new to runfleet does. One that does not decode is also reported
// (undecodable), so the next write replaces it at once.
func readKept(ctx context.Context, cursors store.Cursors, pool string, log *slog.Logger) (kept warm.Kept, cur *store.Cursor, undecodable bool) {
	cur, err := cursors.GetCursor(ctx, keptCursorName(pool))
	if err != nil {
		log.Warn("the kept arrivals could not be read; the forecast reads the ledger's week alone", "err", err)
		return warm.Kept{}, nil, false
	}
	kept, err = warm.DecodeKept(cur.Value)
	if err != nil {
		log.Warn("the kept arrivals do not decode; they are kept again from the ledger", "err", err)
		return warm.Kept{}, cur, true
	}
	return kept, cur, false
}

// keepArrivals is what the forecast reads for pool at now: the kept
// arrivals with every day since added from the ledger (written back when
// that changed them), joined to the ledger's arrivals. Nothing here fails
// the pass: a lost race leaves the record to the replica that won, which
// wrote the same days from the same ledger; any other failure is logged,
// and the next pass tries again.
func keepArrivals(ctx context.Context, cursors store.Cursors, pool string, arrivals []time.Time, now time.Time, p warm.Params, log *slog.Logger) warm.History {
	rules := keptRules(p)
	kept, cur, undecodable := readKept(ctx, cursors, pool, log)
	next, changed := warm.Keep(kept, arrivals, now, rules)
	// A record that does not decode is replaced even by nothing kept, or
	// every pass would warn of it until a day is kept over it.
	if (changed || undecodable) && cur != nil {
		cur.Value, cur.UpdatedAt = next.Encode(), now
		switch err := cursors.PutCursor(ctx, cur); {
		case errors.Is(err, store.ErrConflict):
			log.Debug("another reconciler kept the pool's arrivals first")
		case err != nil:
			log.Warn("the pool's arrivals could not be kept; the next pass tries again", "err", err)
		default:
			log.Info("kept the pool's arrivals past the ledger's week", "kept_from", next.Start, "kept_through", next.End())
		}
	}
	return next.History(arrivals, now, rules)
}
