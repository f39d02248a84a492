package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// plan is every random choice made before the run starts, from the seed:
// when each job is queued, how long it runs, which of its deliveries GitHub
// loses, and when runfleet is killed. Choices made during the run (which
// queued job a machine takes, the senders' jitter) come from streams of the
// same seed; the provider's faults are a hash of the seed and the call.
type plan struct {
	jobs  []*job
	kills []kill
	// replicas is the chaos of replicas mode, instead of kills.
	replicas replicaPlan
}

type kill struct {
	at       time.Duration // since the start of the chaos
	downtime time.Duration // before the restart
	// outage marks the long one: while runfleet is down, a delivery that
	// fails is not sent again, as GitHub never resends one.
	outage bool
}

// Shortest and longest a job runs on its machine.
const (
	minJobRun = 300 * time.Millisecond
	maxJobRun = 3 * time.Second
)

// killWindowEnd is how long after the last arrival runfleet may still be
// killed: late kills land among the deletes and replacements.
const killWindowEnd = 10 * time.Second

// outageGap keeps the short kills this far from the outage on either side.
const outageGap = 5 * time.Second

func newPlan(s settings) plan {
	rng := rand.New(rand.NewPCG(s.seed, 0x91a4))
	p := plan{jobs: make([]*job, s.jobs)}
	for i := range p.jobs {
		p.jobs[i] = &job{
			id:             firstJobID + int64(i),
			arriveAt:       time.Duration(rng.Int64N(int64(s.arrival) + 1)),
			runFor:         minJobRun + time.Duration(rng.Int64N(int64(maxJobRun-minJobRun))),
			loseInProgress: rng.Float64() < s.loseRate,
			loseCompleted:  rng.Float64() < s.loseRate,
			delivery:       deliveryIDs(rng),
		}
	}
	slices.SortFunc(p.jobs, func(a, b *job) int { return int(a.arriveAt - b.arriveAt) })
	if s.intake == intakeScaleSet && s.actionsFaults {
		planReassignments(p.jobs, s.seed)
		planCancellations(p.jobs, s.seed)
	}
	if s.replicas > 1 {
		p.replicas.kills = planReplicaKills(rng, s.kills, s.replicas, s.arrival)
		if s.dbRestart {
			db := planDBRestart(rng, s.arrival)
			p.replicas.db = &db
		}
		return p
	}
	// One kill in each of s.kills equal slots of the window, so kills are
	// spread out and a restart is done before the next is due.
	const from = 3 * time.Second
	window := s.arrival + killWindowEnd - from
	for i := range s.kills {
		slot := window / time.Duration(s.kills)
		at := from + time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot)*8/10+1))
		p.kills = append(p.kills, kill{at: at, downtime: time.Duration(rng.Int64N(int64(2 * time.Second)))})
	}
	if s.outage > 0 {
		p.kills = withOutage(p.kills, s, rng)
	}
	return p
}

// withOutage adds the outage: a kill early in the arrivals (between a
// quarter and three eighths of them, so jobs keep arriving while runfleet
// is down) whose downtime is s.outage. The short kills planned from its
// start on move past its end, so none falls inside it.
func withOutage(kills []kill, s settings, rng *rand.Rand) []kill {
	const from = 3 * time.Second
	at := max(from, s.arrival/4+time.Duration(rng.Int64N(int64(s.arrival/8)+1)))
	out := []kill{{at: at, downtime: s.outage, outage: true}}
	for _, k := range kills {
		if k.at >= at-outageGap {
			k.at += s.outage + 2*outageGap
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b kill) int { return int(a.at - b.at) })
	return out
}

// deliveryIDs are a job's three X-GitHub-Delivery GUIDs: queued,
// in_progress, completed.
func deliveryIDs(rng *rand.Rand) [3]string {
	var ids [3]string
	for i := range ids {
		a, b := rng.Uint64(), rng.Uint64()
		ids[i] = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, (a&0x0fff)|0x4000, (b>>48&0x3fff)|0x8000, b&0xffffffffffff)
	}
	return ids
}

// reassignShare is the share of a scale set's jobs whose assignment
// GitHub takes back (JobCompleted canceled, then JobAssigned again) while
// no runner has taken them: once to MaxReassignments times each.
const reassignShare = 0.10

// cancelShare is the share of a scale set's jobs GitHub cancels for good
// while assigned and not taken by a runner (issue #36): JobCompleted,
// canceled, no runner — the message a taken-back assignment sends too —
// and nothing after it.
const cancelShare = 0.05

// planCancellations draws which jobs are canceled, and how long after
// their assignment, from a stream of its own: the other plans stay the
// same with or without it.
func planCancellations(jobs []*job, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xca7ce1))
	for _, j := range jobs {
		if rng.Float64() < cancelShare {
			j.cancelAfter = time.Duration(100+rng.IntN(1400)) * time.Millisecond
		}
	}
}

// planReassignments draws each job's re-assignments from a stream of its
// own, so the webhook run's plan is the same with or without it.
func planReassignments(jobs []*job, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	for _, j := range jobs {
		if rng.Float64() < reassignShare {
			j.reassignLeft = 1 + rng.IntN(scalesettest.MaxReassignments)
		}
	}
}
