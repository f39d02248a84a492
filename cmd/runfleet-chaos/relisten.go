package main

import (
	"net/http"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// relistenLimit is how soon after its restart a killed listener must be
// listening again (issue #20's acceptance).
const relistenLimit = 60 * time.Second

// notListening is a relisten time for a restart after which no poll was
// answered before the next restart or the end of the run.
const notListening time.Duration = -1

// pollTimes are the moments the Actions service answered a poll (a
// message, or 202 when none came within the window), oldest first. A
// listener is listening when its polls are answered; a refused poll (an
// expired token, an injected 503) is not listening, nor is a session
// that was never made.
func pollTimes(calls []scalesettest.Call) []time.Time {
	var out []time.Time
	for _, c := range calls {
		if c.Op == scalesettest.OpGetMessage && (c.Status == http.StatusOK || c.Status == http.StatusAccepted) {
			out = append(out, c.At)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// relisten is how one restarted listener came back.
type relisten struct {
	// after is how long after the restart the first poll was answered,
	// or notListening.
	after time.Duration
	// window is how long that process had: until the next restart (the
	// next kill ended it) or the end of the run.
	window time.Duration
}

// late reports whether the listener missed the acceptance: it polled
// later than relistenLimit after its restart, or had longer than that and
// never polled.
func (r relisten) late() bool {
	if r.after == notListening {
		return r.window > relistenLimit
	}
	return r.after > relistenLimit
}

// relistenTimes is, for each kill, how long after the restart the first
// poll was answered: an upper bound on when the listener polled again,
// since a poll is recorded when it is answered (at most a poll window
// after it began). A restart no answered poll followed before the next
// restart (or end) is notListening. A killed serve leaves its listener
// lease behind, so a restart often waits out the lease's TTL first.
func relistenTimes(kills []killRecord, polls []time.Time, end time.Time) []relisten {
	out := make([]relisten, len(kills))
	for i, k := range kills {
		until := end
		if i+1 < len(kills) {
			until = kills[i+1].restartedAt
		}
		out[i] = relisten{after: notListening, window: until.Sub(k.restartedAt)}
		at, found := slices.BinarySearchFunc(polls, k.restartedAt, func(p, t time.Time) int { return p.Compare(t) })
		if found {
			at++ // answered at the very moment of the restart: the killed process's
		}
		if at < len(polls) && polls[at].Before(until) {
			out[i].after = polls[at].Sub(k.restartedAt)
		}
	}
	return out
}
