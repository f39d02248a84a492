package main

import "math/rand/v2"

// target is where one delivery attempt goes.
type target struct {
	url     string // the webhook URL
	replica int    // index of the replica (0 with one server)
	run     int    // which start of that replica was up when it was picked
}

// router picks where each delivery attempt goes, as GitHub sends a
// webhook to the one URL it knows and a load balancer in front of
// replicas passes it to one that is up.
type router interface {
	pick(rng *rand.Rand) (target, bool)
	// killed reports whether the process an attempt went to was killed
	// since it was picked: the attempt failed as GitHub's would, and
	// GitHub does not send it again.
	killed(t target) bool
	// replicaName names a replica in the report.
	replicaName(replica int) string
}

// oneServer routes every attempt to the one runfleet serve. Its kills
// are not GitHub's concern: attempts that fail are resent (but in the
// outage, which the senders handle themselves).
type oneServer struct{ url string }

func (o oneServer) pick(*rand.Rand) (target, bool) { return target{url: o.url}, true }
func (oneServer) killed(target) bool               { return false }
func (oneServer) replicaName(int) string           { return "serve" }
