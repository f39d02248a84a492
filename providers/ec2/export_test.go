package ec2

import "time"

// SetTypeFactsClock sets the clock the provider's instance type cache
// measures its TTL with.
func SetTypeFactsClock(p *Provider, now func() time.Time) {
	p.types.mu.Lock()
	defer p.types.mu.Unlock()
	p.types.now = now
}

// TypeFactsTTL is how long instance type facts are cached.
const TypeFactsTTL = typeFactsTTL
