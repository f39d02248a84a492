package simulated

// Stats count the calls a provider received, for tests and benchmarks
// ("how many creates did this job cost?").
type Stats struct {
	Creates        int
	Deletes        int
	Gets           int
	Lists          int
	RemoveAlls     int
	Starts         int
	Stops          int
	CreateFailures int // injected failures and duplicates
	DeleteFailures int
	Hangs          int
}

// Stats returns the call counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// CreateCalls is how many times CreateInstance was called for name.
func (p *Provider) CreateCalls(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.creates[name]
}

// DeleteCalls is how many times DeleteInstance was called for the machine
// named name, whether by name or by its provider id.
func (p *Provider) DeleteCalls(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deletes[name]
}
