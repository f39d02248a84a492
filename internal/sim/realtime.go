package sim

import (
	"context"
	"maps"
	"slices"
	"time"
)

// queueSent and queueReceived tell the workers when something becomes
// visible. On the virtual clock that is an event. A real-time queue (SQS)
// shows a message that was received and not acknowledged again after a
// real visibility timeout: once the worker holding it let go of it
// (queueReleased), waitRealTime waits for that.
func (w *world) queueSent(p *process, delay time.Duration) {
	w.wakeAt(p, w.now().Add(delay))
}

func (w *world) queueReceived(p *process, id string, vis time.Duration) {
	if !w.backend.RealTime() {
		w.wakeAt(p, w.now().Add(vis))
		return
	}
	if w.inFlight == nil {
		w.inFlight, w.realPending = map[string]time.Time{}, map[string]time.Time{}
	}
	w.inFlight[id] = time.Now().Add(vis)
}

func (w *world) queueReleased(id string) {
	if due, ok := w.inFlight[id]; ok {
		delete(w.inFlight, id)
		w.realPending[id] = due
	}
}

func (w *world) queueAcked(id string) {
	delete(w.inFlight, id)
	delete(w.realPending, id)
}

// waitRealTime, when nothing can run, waits (in real time) for the first
// released message of a real-time queue to be visible again and pokes the
// workers. It reports whether it did.
func (w *world) waitRealTime() bool {
	if len(w.realPending) == 0 || w.proc == nil || !w.proc.up {
		return false
	}
	var firstID string
	var first time.Time
	for _, id := range slices.Sorted(maps.Keys(w.realPending)) {
		if due := w.realPending[id]; firstID == "" || due.Before(first) {
			firstID, first = id, due
		}
	}
	time.Sleep(time.Until(first))
	delete(w.realPending, firstID)
	w.proc.pokeWorkers()
	return true
}

// releaseHeld hands a held delayed message to the real queue once due: SQS
// keeps it whether or not runfleet is running.
func (w *world) releaseHeld(body []byte) {
	q := w.heldQueue
	if q == nil {
		return
	}
	if err := q.Send(context.Background(), body, 0); err != nil {
		w.violate("the queue keeps what was sent", "sending a held delayed message: %v", err)
		return
	}
	if p := w.proc; p != nil && p.up {
		p.pokeWorkers()
	}
}
