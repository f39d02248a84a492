package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// The Actions service's faults in a scale-set run. The fake arms its
// faults call by call (FailNext, SlowNext, DeliverTwice); the driver
// arms them at random moments, so over the run a moderate share of calls
// misbehaves. Empty polls (202) need no arming: every poll that finds no
// message within actionsPollWindow answers 202. GitHub's re-assignment
// of a job no runner took is played by the world (reassign), and a stale
// session's 409 comes by itself when a kill leaves one behind.
const (
	// actionsPollWindow is how long a poll waits for a message before
	// 202: GitHub's is about 50 s; shorter here, so polls end often
	// and a relisten shows soon after a restart.
	actionsPollWindow = 3 * time.Second
	// faultEvery is how often one fault may be armed.
	faultEvery = 250 * time.Millisecond
	// slowFor is how late a slow answer comes.
	slowFor = 2 * time.Second
)

// actionsFault is one fault the driver may arm, and the chance it is
// armed at each faultEvery while none of its endpoint's is still to come.
type actionsFault struct {
	name   string
	chance float64
	// op is the endpoint the fault answers; "" for DeliverTwice, which
	// the fake keeps as one flag.
	op  scalesettest.Op
	arm func(a *scalesettest.Server)
}

// actionsFaults are the faults, at moderate rates: each is armed about
// once every 5 to 25 seconds.
var actionsFaults = []actionsFault{
	{"poll 503", 0.03, scalesettest.OpGetMessage, func(a *scalesettest.Server) { a.FailNext(scalesettest.OpGetMessage, http.StatusServiceUnavailable, 1) }},
	{"slow poll", 0.02, scalesettest.OpGetMessage, func(a *scalesettest.Server) { a.SlowNext(scalesettest.OpGetMessage, slowFor, 1) }},
	// An acknowledgement that fails leaves the message unacknowledged:
	// it is delivered again.
	{"ack 500", 0.03, scalesettest.OpDeleteMessage, func(a *scalesettest.Server) {
		a.FailNext(scalesettest.OpDeleteMessage, http.StatusInternalServerError, 1)
	}},
	{"slow ack", 0.01, scalesettest.OpDeleteMessage, func(a *scalesettest.Server) { a.SlowNext(scalesettest.OpDeleteMessage, slowFor, 1) }},
	{"delivered twice", 0.03, "", func(a *scalesettest.Server) { a.DeliverTwice() }},
	{"jit 503", 0.02, scalesettest.OpGenerateJIT, func(a *scalesettest.Server) { a.FailNext(scalesettest.OpGenerateJIT, http.StatusServiceUnavailable, 1) }},
	{"slow jit", 0.01, scalesettest.OpGenerateJIT, func(a *scalesettest.Server) { a.SlowNext(scalesettest.OpGenerateJIT, slowFor, 1) }},
	{"remove 503", 0.02, scalesettest.OpRemoveRunner, func(a *scalesettest.Server) {
		a.FailNext(scalesettest.OpRemoveRunner, http.StatusServiceUnavailable, 1)
	}},
	{"refresh 503", 0.01, scalesettest.OpRefreshSession, func(a *scalesettest.Server) {
		a.FailNext(scalesettest.OpRefreshSession, http.StatusServiceUnavailable, 1)
	}},
}

// drawFaults picks the faults armed at one faultEvery.
func drawFaults(rng *rand.Rand) []actionsFault {
	var out []actionsFault
	for _, f := range actionsFaults {
		if rng.Float64() < f.chance {
			out = append(out, f)
		}
	}
	return out
}

// armFaults arms faults until ctx ends and returns how often each was
// armed.
func armFaults(ctx context.Context, a *scalesettest.Server, seed uint64) map[string]int {
	rng := rand.New(rand.NewPCG(seed, 0xac7))
	armed := map[string]int{}
	t := time.NewTicker(faultEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return armed
		case <-t.C:
			armDrawn(a, rng, armed)
		}
	}
}

// armDrawn arms the faults drawn for one faultEvery, each only when no
// fault of its endpoint is still to come, and counts them in armed.
func armDrawn(a *scalesettest.Server, rng *rand.Rand, armed map[string]int) {
	for _, f := range drawFaults(rng) {
		if f.op != "" && a.Armed(f.op) > 0 {
			continue // one at a time: see Armed
		}
		f.arm(a)
		armed[f.name]++
	}
}
