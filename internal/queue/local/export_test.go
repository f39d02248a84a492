package local

// Waiting is how many Receives are parked, for tests that must start
// something only once receivers wait.
func (q *Queue) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}
