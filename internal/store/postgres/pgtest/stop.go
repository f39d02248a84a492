package pgtest

// Stop stops the shared server, if one was started, and removes its
// directory: for a TestMain that has other servers to stop as well and so
// cannot make Main its whole body.
func Stop() {
	if shared != nil {
		shared.stop()
		shared = nil
	}
}
