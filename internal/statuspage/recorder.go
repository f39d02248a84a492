package statuspage

import (
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Bounds of what a Recorder keeps: memory stays flat however busy the
// fleet is, and the page only ever shows this much.
const (
	// MaxTransitions is how many instance status changes are kept.
	MaxTransitions = 200
	// SampleWindow is how far back queue-time samples are kept.
	SampleWindow = time.Hour
	// MaxSamples bounds the samples within SampleWindow; past it the oldest
	// go first, so a burst shortens the chart's history instead of growing
	// memory.
	MaxSamples = 10000
)

// Transition is one committed instance status change.
type Transition struct {
	At       time.Time
	Instance string
	Pool     string
	From, To runner.Status
	// Fault is the instance's provider fault at the change, if any.
	Fault string
}

// Sample is one job reaching a queue stage after waiting Waited.
type Sample struct {
	At     time.Time
	Pool   string
	Stage  engine.QueueStage
	Waited time.Duration
}

// Recorder is an engine.Observer keeping what the status page shows and
// the store cannot tell: recent transitions and queue-time samples. It
// lives in memory only, so a restart starts it empty.
type Recorder struct {
	now func() time.Time

	mu          sync.Mutex
	transitions ring[Transition]
	samples     ring[Sample]
}

var _ engine.Observer = (*Recorder)(nil)

// NewRecorder returns an empty recorder; now nil means time.Now.
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{
		now:         now,
		transitions: newRing[Transition](MaxTransitions),
		samples:     newRing[Sample](MaxSamples),
	}
}

// InstanceChanged implements engine.Observer.
func (r *Recorder) InstanceChanged(inst *runner.Instance, from runner.Status) {
	t := Transition{At: r.now(), Instance: inst.Name, Pool: inst.Pool, From: from, To: inst.Status, Fault: inst.ProviderFault}
	r.mu.Lock()
	r.transitions.push(t)
	r.mu.Unlock()
}

// JobWaited implements engine.Observer.
func (r *Recorder) JobWaited(pool string, stage engine.QueueStage, waited time.Duration) {
	s := Sample{At: r.now(), Pool: pool, Stage: stage, Waited: waited}
	r.mu.Lock()
	r.samples.push(s)
	r.mu.Unlock()
}

// DeleteRetried implements engine.Observer; the page does not show it.
func (r *Recorder) DeleteRetried(string) {}

// WorkTakenOver implements engine.Observer; the page does not show it.
func (r *Recorder) WorkTakenOver(*runner.Instance, string, time.Duration) {}

// ReconcilePassed implements engine.Observer; the page does not show it.
func (r *Recorder) ReconcilePassed(engine.ReconcileReport, time.Duration) {}

// Transitions returns the kept transitions, newest first.
func (r *Recorder) Transitions() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitions.newestFirst()
}

// Samples returns the queue-time samples of the last SampleWindow, oldest
// first.
func (r *Recorder) Samples() []Sample {
	since := r.now().Add(-SampleWindow)
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.samples.newestFirst()
	kept := make([]Sample, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		if !all[i].At.Before(since) {
			kept = append(kept, all[i])
		}
	}
	return kept
}

// ring is a fixed-capacity buffer that overwrites its oldest entry.
type ring[T any] struct {
	buf  []T
	next int
	full bool
}

func newRing[T any](capacity int) ring[T] { return ring[T]{buf: make([]T, capacity)} }

func (r *ring[T]) push(v T) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

func (r *ring[T]) len() int {
	if r.full {
		return len(r.buf)
	}
	return r.next
}

func (r *ring[T]) newestFirst() []T {
	n := r.len()
	out := make([]T, n)
	for i := range n {
		out[i] = r.buf[(r.next-1-i+len(r.buf))%len(r.buf)]
	}
	return out
}
