package promexport

import (
	"github.com/prometheus/client_golang/prometheus"
)

// listenerFamilies are the scale-set listeners' series. Unlike the other
// per-pool families they exist only for the pools a listener runs for
// (WatchListeners): a webhook pool has no listener, and a last-poll gauge
// at 0 for it would read as a listener silent since 1970.
type listenerFamilies struct {
	polls, conflicts *prometheus.CounterVec
	lastPoll         *prometheus.GaugeVec
}

// WatchListeners makes the listener series of pools, the scale-set pools
// this process runs a listener for: the counters at 0, and the last-poll
// gauge at now. The gauge starts at the listener's start rather than
// staying absent until the first answer, because a listener that is never
// answered (409 from its first try) is exactly what the alert is for; an
// absent series would never fire it.
func (r *Recorder) WatchListeners(pools []string) {
	for _, p := range pools {
		r.listener.polls.WithLabelValues(p)
		r.listener.conflicts.WithLabelValues(p)
		r.listenerHeard(p)
	}
}

// ListenerListening restarts the pool's last-poll clock when this process
// takes the lease: a replica that stood by for days and just took over
// has five minutes to be answered, like a fresh one, instead of firing the
// alert at once with its start time.
func (r *Recorder) ListenerListening(pool string) { r.listenerHeard(pool) }

// ListenerPolled counts an answered poll and moves the pool's last-poll
// gauge to now.
func (r *Recorder) ListenerPolled(pool string) {
	r.listener.polls.WithLabelValues(pool).Inc()
	r.listenerHeard(pool)
}

func (r *Recorder) ListenerSessionConflict(pool string) {
	r.listener.conflicts.WithLabelValues(pool).Inc()
}

func (r *Recorder) listenerHeard(pool string) {
	r.listener.lastPoll.WithLabelValues(pool).Set(float64(r.now().UnixNano()) / 1e9)
}
