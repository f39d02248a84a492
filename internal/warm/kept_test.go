package warm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var testRules = KeepRules{Ledger: 7 * Day, Settle: time.Hour, Span: 4*Week + 3*time.Hour + Day}

func TestKeep(t *testing.T) {
	monday := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) time.Time { return monday.Add(d) }
	minutes := func(from time.Time, counts map[int]int, n int) Kept {
		k := Kept{Start: from, Counts: make([]int, n)}
		for m, c := range counts {
			k.Counts[m] = c
		}
		return k
	}
	for _, c := range []struct {
		name        string
		kept        Kept
		ledger      []time.Time
		now         time.Time
		want        Kept
		wantChanged bool
	}{{
		name:   "a pool younger than a day keeps nothing yet",
		ledger: []time.Time{at(10 * time.Hour)},
		now:    at(20 * time.Hour),
	}, {
		name:   "a day is kept only once it has settled",
		ledger: []time.Time{at(10 * time.Hour)},
		now:    at(Day + 30*time.Minute),
	}, {
		name:        "the pool's first day is kept from its first job",
		ledger:      []time.Time{at(10*time.Hour + 5*time.Second), at(10*time.Hour + 30*time.Second), at(23 * time.Hour)},
		now:         at(Day + time.Hour),
		want:        minutes(at(10*time.Hour), map[int]int{0: 2, 13 * 60: 1}, 14*60),
		wantChanged: true,
	}, {
		name:   "a kept day is not counted again",
		kept:   minutes(at(10*time.Hour), map[int]int{0: 2}, 14*60),
		ledger: []time.Time{at(10 * time.Hour), at(10 * time.Hour), at(Day + 2*time.Hour)},
		now:    at(Day + 23*time.Hour),
		want:   minutes(at(10*time.Hour), map[int]int{0: 2}, 14*60),
	}, {
		name:        "the next day is added from the ledger",
		kept:        minutes(at(10*time.Hour), map[int]int{0: 2}, 14*60),
		ledger:      []time.Time{at(10 * time.Hour), at(Day + 2*time.Hour)},
		now:         at(2*Day + 2*time.Hour),
		want:        minutes(at(10*time.Hour), map[int]int{0: 2, 16 * 60: 1}, 38*60),
		wantChanged: true,
	}, {
		name:        "a kept history that no longer joins the ledger starts again",
		kept:        minutes(at(10*time.Hour), map[int]int{0: 2}, 14*60),
		ledger:      []time.Time{at(9*Day + 3*time.Hour)},
		now:         at(10*Day + 2*time.Hour),
		want:        minutes(at(9*Day+3*time.Hour), map[int]int{0: 1}, 21*60),
		wantChanged: true,
	}, {
		name:        "nothing in the ledger and nothing joining: nothing kept",
		kept:        minutes(at(10*time.Hour), map[int]int{0: 2}, 14*60),
		now:         at(10*Day + 2*time.Hour),
		wantChanged: true,
	}, {
		name:        "a quiet week is kept as quiet",
		kept:        minutes(at(0), map[int]int{5: 1}, 24*60),
		now:         at(7*Day + 2*time.Hour),
		want:        minutes(at(0), map[int]int{5: 1}, 7*24*60),
		wantChanged: true,
	}, {
		name:        "what is older than the span is dropped",
		kept:        minutes(at(0), map[int]int{0: 1, 24 * 60: 3}, 29*24*60),
		now:         at(30*Day + 2*time.Hour),
		want:        minutes(at(30*Day+2*time.Hour-testRules.Span), map[int]int{60: 3}, int(testRules.Span/time.Minute)-2*60),
		wantChanged: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := Keep(c.kept, c.ledger, c.now, testRules)
			if changed != c.wantChanged || !got.Start.Equal(c.want.Start) || !slices.Equal(got.Counts, c.want.Counts) {
				t.Fatalf("Keep = %s, changed %v; want %s, changed %v", show(got), changed, show(c.want), c.wantChanged)
			}
		})
	}
}

func show(k Kept) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{start %s, %d minutes:", k.Start.Format(time.DateTime), len(k.Counts))
	for i, c := range k.Counts {
		if c > 0 {
			fmt.Fprintf(&b, " %d:%d", i, c)
		}
	}
	return b.String() + "}"
}

// A history read for a time past sees nothing kept after it, and the
// ledger from where Kept ends.
func TestKeptHistoryStopsAtNow(t *testing.T) {
	monday := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC))
	k := Kept{Start: monday, Counts: make([]int, 2*24*60)}
	k.Counts[60], k.Counts[25*60] = 1, 4
	now := monday.Add(2*time.Hour + 30*time.Second)
	h := k.History([]time.Time{monday.Add(2 * time.Hour), monday.Add(3 * Day)}, now, testRules)
	if !h.Start.Equal(monday) || len(h.Counts) != 2*60+2 {
		t.Fatalf("history from %v, %d minutes; want from %v, %d", h.Start, len(h.Counts), monday, 2*60+2)
	}
	if h.Counts[60] != 1 || h.Counts[120] != 1 || sum(h.Counts) != 2 {
		t.Fatalf("history counts %v; want the kept minute 60 and the ledger's minute 120", nonzero(h.Counts))
	}
	// Past Kept's end, a job of its last minute the ledger still holds is
	// counted once: Kept holds it, the ledger is read from Kept's end.
	k = Kept{Start: monday, Counts: make([]int, 24*60)}
	k.Counts[24*60-1] = 1
	h = k.History([]time.Time{monday.Add(Day - 30*time.Second), monday.Add(Day + time.Minute)}, monday.Add(Day+2*time.Hour), testRules)
	if h.Counts[24*60-1] != 1 || sum(h.Counts) != 2 {
		t.Fatalf("history counts %v; want minute %d once and minute %d", nonzero(h.Counts), 24*60-1, 24*60+1)
	}
}

func sum(c []int) (n int) {
	for _, x := range c {
		n += x
	}
	return n
}

func nonzero(c []int) map[int]int {
	m := map[int]int{}
	for i, x := range c {
		if x != 0 {
			m[i] = x
		}
	}
	return m
}

// Over weeks of a pool's jobs, with reconcilers passing at random times,
// two replicas racing on the one record (the loser's write refused, as a
// compare-and-set refuses it), writes lost to a crash between the read and
// the write, deliveries recorded up to 50 minutes late, the ledger
// forgetting each job a week after it settled, and (odd seeds) every
// reconciler stopped for over a week: the history the forecast reads
// counts every job the ledger ever held exactly once, for as far back as
// the span — not zero, not two, minute by minute.
func TestKeptHistoryCountsEveryJobOnce(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { keptRun(t, seed) })
	}
}

type keptJob struct{ queued, recorded, settled time.Time }

func keptRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6b657074))
	start := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)).Add(time.Duration(r.IntN(24*60)) * time.Minute)
	end := start.Add(6*Week + time.Duration(r.IntN(7*24*60))*time.Minute)
	// Odd seeds stop every reconciler for over a week, within the span
	// read at the end: the history kept before cannot join the ledger
	// after, and must start again rather than read the gap as quiet.
	var stallFrom, stallTo, restarted time.Time
	if seed%2 == 1 {
		stallFrom = start.Add(2*Week + time.Duration(r.IntN(2*24*60))*time.Minute)
		stallTo = stallFrom.Add(7*Day + time.Duration(r.IntN(2*24*60))*time.Minute)
	}
	var jobs []keptJob
	for at := start; at.Before(end); at = at.Add(time.Duration(1+r.IntN(40)) * time.Minute) {
		for range 1 + r.IntN(6) {
			q := at.Add(time.Duration(r.IntN(60)) * time.Second)
			jobs = append(jobs, keptJob{q, q.Add(time.Duration(r.IntN(50)) * time.Minute), q.Add(time.Duration(r.IntN(3*24*60)) * time.Minute)})
		}
	}
	slices.SortFunc(jobs, func(a, b keptJob) int { return a.queued.Compare(b.queued) })
	ledger := func(now time.Time) []time.Time {
		var out []time.Time
		// Jobs are in queued order and settle within three days: older
		// ones are long gone from the ledger.
		first, _ := slices.BinarySearchFunc(jobs, now.Add(-testRules.Ledger-3*Day), func(j keptJob, t time.Time) int { return j.queued.Compare(t) })
		for _, j := range jobs[first:] {
			if j.queued.After(now) {
				break
			}
			if !j.recorded.After(now) && now.Before(j.settled.Add(testRules.Ledger)) {
				out = append(out, j.queued)
			}
		}
		return out
	}
	var stored Kept
	var version int
	for now := start; now.Before(end); now = now.Add(time.Duration(1+r.IntN(240)) * time.Minute) {
		if !now.Before(stallFrom) && now.Before(stallTo) {
			continue
		}
		if !stallTo.IsZero() && restarted.IsZero() && !now.Before(stallTo) {
			restarted = now
		}
		// Two replicas read the same record; the first to write wins.
		readVersion, a, b := version, stored, stored
		l := ledger(now)
		for _, mine := range []Kept{a, b} {
			next, changed := Keep(mine, l, now, testRules)
			if !changed || r.IntN(5) == 0 { // unchanged, or crashed before writing
				continue
			}
			if version == readVersion {
				stored, version = next, version+1
			}
		}
	}
	now := end
	h := stored.History(ledger(now), now, testRules)
	want := map[int]int{}
	from := now.Add(-testRules.Span)
	for _, j := range jobs {
		if !j.recorded.After(now) && !j.queued.Before(h.Start) {
			want[int(j.queued.Sub(h.Start)/time.Minute)]++
		}
	}
	if !restarted.IsZero() && restarted.Add(-testRules.Ledger).After(from) {
		from = restarted.Add(-testRules.Ledger)
	}
	if h.Start.After(from.Add(time.Minute)) {
		t.Fatalf("the history begins at %v: it should reach back to %v (kept %s)", h.Start, from, show(stored))
	}
	for i, c := range h.Counts {
		if c != want[i] {
			t.Fatalf("minute %s: history counts %d jobs, %d were queued in it", h.Start.Add(time.Duration(i)*time.Minute), c, want[i])
		}
		delete(want, i)
	}
	if len(want) > 0 {
		t.Fatalf("jobs outside the history: %v", want)
	}
}

func TestKeptEncodeDecode(t *testing.T) {
	k := Kept{Start: time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC), Counts: make([]int, 4*7*24*60)}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		k.Counts[r.IntN(len(k.Counts))] += 1 + r.IntN(40)
	}
	text := k.Encode()
	got, err := DecodeKept(text)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Start.Equal(k.Start) || !slices.Equal(got.Counts, k.Counts) {
		t.Fatalf("decoded %s, want %s", show(got), show(k))
	}
	if len(text) > 64<<10 {
		t.Errorf("four weeks of 5,000 busy minutes encode to %d bytes; a record should stay far below DynamoDB's 400 KB", len(text))
	}
	if got, err := DecodeKept(""); err != nil || len(got.Counts) != 0 {
		t.Errorf("DecodeKept(\"\") = %s, %v; want nothing kept", show(got), err)
	}
	for _, bad := range []string{"not base64!", "AAAA", Kept{Start: k.Start, Counts: make([]int, maxKeptMinutes+1)}.Encode()} {
		if _, err := DecodeKept(bad); err == nil {
			t.Errorf("DecodeKept(%.20q…) took a record runfleet never wrote", bad)
		}
	}
}

// Read from the ledger alone, a history begins at its oldest arrival, but
// no earlier than what the ledger wholly holds: a job left open for three
// weeks does not make the weeks before the ledger's one look quiet.
func TestLedgerHistoryBeginsWhereTheLedgerIsWhole(t *testing.T) {
	now := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)).Add(4*Week + 10*time.Hour)
	for _, c := range []struct {
		name   string
		ledger []time.Time
		want   time.Time
	}{
		{"a young pool: its first job", []time.Time{now.Add(-3*time.Hour + 20*time.Second), now.Add(-time.Hour)}, now.Add(-3 * time.Hour)},
		{"a job open for three weeks", []time.Time{now.Add(-21 * Day), now.Add(-time.Hour)}, now.Add(-testRules.Ledger)},
		{"nothing in the ledger", nil, now},
	} {
		if got := (Kept{}).History(c.ledger, now, testRules).Start; !got.Equal(c.want) {
			t.Errorf("%s: history from %v, want %v", c.name, got, c.want)
		}
	}
}
