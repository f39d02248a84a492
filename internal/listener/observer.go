package listener

// Observer hears whether a listener hears GitHub: a listener that runs
// but never has a poll answered (its session refused with 409 again and
// again, every poll failing) looks healthy from the outside otherwise —
// the process is up and logs only warnings. metrics.Recorder implements
// it, so the listeners report to the same metrics as the rest of
// runfleet. Calls are made on the listener's own goroutine and must not
// block.
type Observer interface {
	// ListenerListening: this process took the pool's lease and starts
	// listening; the wait for the first answered poll starts here.
	ListenerListening(pool string)
	// ListenerPolled: the Actions service answered a poll of the pool's
	// session, with a message or with an empty queue (202).
	ListenerPolled(pool string)
	// ListenerSessionConflict: creating the pool's message session met a
	// 409, another session holds the scale set.
	ListenerSessionConflict(pool string)
}

// nopObserver stands in for a nil Options.Observer.
type nopObserver struct{}

func (nopObserver) ListenerListening(string)       {}
func (nopObserver) ListenerPolled(string)          {}
func (nopObserver) ListenerSessionConflict(string) {}
