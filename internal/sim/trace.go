package sim

import (
	"fmt"
	"hash"
	"hash/fnv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

// trace keeps the last lines of what happened (every webhook, message,
// GitHub and provider call and its result, crash, restart and reconcile
// pass) for the report of a failing seed, and a hash of every line ever
// written, so two runs of one seed can be compared whole.
type trace struct {
	clock *testclock.Clock
	start time.Time
	ring  []string
	next  int
	full  bool
	sum   hash.Hash64
	lines int
	// echo receives every line as it is written (the -simtrace flag).
	echo func(string)
	// who names the task a line comes from ("" for the world's own events).
	who func() string
}

func newTrace(clock *testclock.Clock, keep int) *trace {
	return &trace{clock: clock, start: clock.Now(), ring: make([]string, keep), sum: fnv.New64a()}
}

// add writes one line stamped with the virtual time since the start.
func (t *trace) add(format string, args ...any) {
	line := stamp(t.clock.Now().Sub(t.start)) + " "
	if t.who != nil {
		if who := t.who(); who != "" {
			line += "[" + who + "] "
		}
	}
	line += fmt.Sprintf(format, args...)
	t.sum.Write([]byte(line))
	t.sum.Write([]byte{'\n'})
	t.lines++
	if t.echo != nil {
		t.echo(line)
	}
	t.ring[t.next] = line
	t.next++
	if t.next == len(t.ring) {
		t.next, t.full = 0, true
	}
}

// last returns up to n of the most recent lines, oldest first.
func (t *trace) last(n int) []string {
	var all []string
	if t.full {
		all = append(all, t.ring[t.next:]...)
	}
	all = append(all, t.ring[:t.next]...)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// related returns up to n of the most recent lines that mention any of
// the subjects, oldest first.
func (t *trace) related(subjects []string, n int) []string {
	if len(subjects) == 0 {
		return nil
	}
	var out []string
	for _, line := range t.last(len(t.ring)) {
		for _, s := range subjects {
			if strings.Contains(line, s) {
				out = append(out, line)
				break
			}
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// digest identifies the whole trace: equal for two runs of a seed iff they
// did the same things at the same virtual times.
func (t *trace) digest() string {
	return fmt.Sprintf("%016x/%d", t.sum.Sum64(), t.lines)
}

// stamp formats a virtual duration as h:mm:ss.mmm.
func stamp(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}

// indent joins trace lines for a test failure message.
func indent(lines []string) string {
	return "    " + strings.Join(lines, "\n    ")
}
