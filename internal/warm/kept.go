package warm

import (
	"time"
)

// Kept is what the forecast keeps of a pool's arrivals once the job ledger
// forgets them: the ledger keeps a settled job a week, and the plan reads
// four. It is the jobs queued in each minute from Start up to a UTC
// midnight (Start itself may fall inside the pool's first day: what came
// before it is unknown, not quiet).
//
// Kept is rebuilt from the ledger, never counted as jobs come: a day is
// added once it is over and still wholly in the ledger, so a duplicate
// delivery, a second replica writing the same day or a crash between the
// read and the write cannot count a job twice or lose one — every writer
// derives the same day from the same ledger.
type Kept struct {
	Start  time.Time
	Counts []int
}

// End is the first minute Kept does not hold.
func (k Kept) End() time.Time { return k.Start.Add(time.Duration(len(k.Counts)) * time.Minute) }

// KeepRules say what the ledger holds and what is kept.
type KeepRules struct {
	// Ledger is how far back the ledger holds every job: a settled job is
	// kept that long after it settled, so one queued that long ago is
	// still there (store.DeletedRetention).
	Ledger time.Duration
	// Settle is how long after a day ends it is kept: a job recovered late
	// from the App's delivery log still lands in its own day.
	Settle time.Duration
	// Span is how far back is kept: what the forecast reads.
	Span time.Duration
}

// joins reports whether k and the ledger at now make one history: k ends
// where the ledger still holds every job. A Kept left unwritten for longer
// than the ledger keeps jobs (every reconciler stopped for a week) has a
// gap no one can fill, and is started again.
func (k Kept) joins(now time.Time, r KeepRules) bool {
	return len(k.Counts) > 0 && !k.End().Before(now.Add(-r.Ledger))
}

// Keep returns k with every day added that has ended (Settle ago) since
// k's end, counted from ledger (the pool's queued times the ledger holds),
// and the minutes older than Span dropped; changed says whether it differs
// from k. A k that does not join the ledger is started again from the
// ledger's oldest arrival, as the forecast without Kept starts its
// history.
func Keep(k Kept, ledger []time.Time, now time.Time, r KeepRules) (next Kept, changed bool) {
	if k.joins(now, r) {
		next = Kept{Start: k.Start, Counts: append([]int(nil), k.Counts...)}
	} else {
		start, ok := ledgerStart(ledger, now, r)
		if !ok {
			return Kept{}, len(k.Counts) > 0
		}
		next = Kept{Start: start}
	}
	through := now.Add(-r.Settle).UTC().Truncate(Day)
	if through.After(next.End()) {
		next.Counts = append(next.Counts, NewHistory(next.End(), through, time.Minute, ledger).Counts...)
	}
	if from := now.Add(-r.Span).Truncate(time.Minute); next.Start.Before(from) {
		drop := min(int(from.Sub(next.Start)/time.Minute), len(next.Counts))
		next.Counts, next.Start = next.Counts[drop:], from
	}
	if len(next.Counts) == 0 {
		return Kept{}, len(k.Counts) > 0
	}
	changed = !next.Start.Equal(k.Start) || len(next.Counts) != len(k.Counts)
	return next, changed
}

// ledgerStart is where a history read from the ledger alone begins: its
// oldest arrival, but no earlier than what the ledger wholly holds (a job
// left open for weeks does not make the weeks before it look quiet).
func ledgerStart(ledger []time.Time, now time.Time, r KeepRules) (time.Time, bool) {
	var first time.Time
	for _, a := range ledger {
		if first.IsZero() || a.Before(first) {
			first = a
		}
	}
	if first.IsZero() {
		return time.Time{}, false
	}
	if held := now.Add(-r.Ledger); first.Before(held) {
		first = held.Add(time.Minute - 1) // the first whole minute at or after held
	}
	return first.Truncate(time.Minute), true
}

// History is the history the forecast reads at now: k's minutes before
// now, then the ledger's arrivals from where k ends. Without a k that
// joins the ledger, it is the ledger's alone, from where Keep would start
// keeping it (ledgerStart).
func (k Kept) History(ledger []time.Time, now time.Time, r KeepRules) History {
	end := now.Add(time.Minute)
	if !k.joins(now, r) {
		start, ok := ledgerStart(ledger, now, r)
		if !ok {
			start = now.Truncate(time.Minute)
		}
		return NewHistory(start, end, time.Minute, ledger)
	}
	h := NewHistory(k.Start, end, time.Minute, nil)
	// Only k's minutes wholly before now: a history read for a time past
	// (runfleet why) must not see what came after it.
	cut := min(len(k.Counts), max(int(now.Sub(k.Start)/time.Minute), 0))
	copy(h.Counts, k.Counts[:cut])
	from := k.Start.Add(time.Duration(cut) * time.Minute)
	for _, a := range ledger {
		if !a.Before(from) {
			h.Add(a)
		}
	}
	return h
}
