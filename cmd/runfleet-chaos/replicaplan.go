package main

import (
	"math/rand/v2"
	"time"
)

// In replicas mode the plan kills one replica at a time, each at a seeded
// moment and for a seeded downtime, and restarts the database once.

// replicaKill is one planned kill -9 of one replica.
type replicaKill struct {
	at       time.Duration // since the start of the chaos
	replica  int           // index into the replicas
	downtime time.Duration // before its restart
}

// dbRestart is the planned crash and restart of the PostgreSQL server.
type dbRestart struct {
	at       time.Duration
	downtime time.Duration // between the crash and the restart
}

// Bounds on what the replicas' plan draws.
const (
	minReplicaDowntime = 500 * time.Millisecond
	maxReplicaDowntime = 6 * time.Second
	// assumedRestart is how long the planner counts a replica as down past
	// its downtime: the time a restart takes to answer /healthz (about a
	// second here). The driver checks again when the kill is due.
	assumedRestart = 3 * time.Second
	minDBDowntime  = time.Second
	maxDBDowntime  = 4 * time.Second
)

// planReplicaKills spreads kills over the same window as the single
// server's kills (one per slot) and picks each victim among the replicas
// the plan has up at that moment, so that at least one replica is always
// up; a kill due while only one is up moves to when another is back. Kills
// come in time order, and a kill never comes before the one planned
// before it, so each is checked against every kill that can overlap it.
func planReplicaKills(rng *rand.Rand, kills, replicas int, arrival time.Duration) []replicaKill {
	const from = 3 * time.Second
	window := arrival + killWindowEnd - from
	var out []replicaKill
	for i := range kills {
		slot := window / time.Duration(kills)
		at := from + time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot)*8/10+1))
		if len(out) > 0 {
			at = max(at, out[len(out)-1].at)
		}
		downtime := minReplicaDowntime + time.Duration(rng.Int64N(int64(maxReplicaDowntime-minReplicaDowntime)))
		for {
			up := plannedUp(out, replicas, at)
			if len(up) >= 2 {
				out = append(out, replicaKill{at: at, replica: up[rng.IntN(len(up))], downtime: downtime})
				break
			}
			at = nextBack(out, at)
		}
	}
	return out
}

// plannedUp lists the replicas the plan has up at moment at.
func plannedUp(kills []replicaKill, replicas int, at time.Duration) []int {
	down := make([]bool, replicas)
	for _, k := range kills {
		if k.at <= at && at < k.at+k.downtime+assumedRestart {
			down[k.replica] = true
		}
	}
	var up []int
	for i, d := range down {
		if !d {
			up = append(up, i)
		}
	}
	return up
}

// nextBack is the first moment after at when a replica down at at is
// planned back.
func nextBack(kills []replicaKill, at time.Duration) time.Duration {
	next := time.Duration(-1)
	for _, k := range kills {
		back := k.at + k.downtime + assumedRestart
		if k.at <= at && at < back && (next < 0 || back < next) {
			next = back
		}
	}
	return next
}

// planDBRestart puts the database's crash in the middle of the arrivals
// (between two and three fifths of them), when webhooks, creates and
// deletes all run.
func planDBRestart(rng *rand.Rand, arrival time.Duration) dbRestart {
	at := max(3*time.Second, arrival*2/5+time.Duration(rng.Int64N(int64(arrival/5)+1)))
	return dbRestart{at: at, downtime: minDBDowntime + time.Duration(rng.Int64N(int64(maxDBDowntime-minDBDowntime)))}
}

// chooseVictim is the replica to kill now: the planned one if it is up,
// else the next one up after it. None (false) while fewer than two are up:
// killing would leave no replica to take webhooks.
func chooseVictim(planned int, up []bool) (int, bool) {
	n := 0
	for _, u := range up {
		if u {
			n++
		}
	}
	if n < 2 {
		return 0, false
	}
	for i := range up {
		if r := (planned + i) % len(up); up[r] {
			return r, true
		}
	}
	return 0, false
}

// routable lists the replicas a load balancer sends requests to at now:
// those up, and those killed less than lag ago, which its health check
// has not noticed yet.
func routable(up []bool, killedAt []time.Time, now time.Time, lag time.Duration) []int {
	var out []int
	for i, u := range up {
		if u || (!killedAt[i].IsZero() && now.Sub(killedAt[i]) < lag) {
			out = append(out, i)
		}
	}
	return out
}
