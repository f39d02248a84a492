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

// DefaultWarmRunnerVersion is exported to the tests.
const DefaultWarmRunnerVersion = defaultWarmRunnerVersion

// PostLaunchTagKeys are the tag keys the provider writes or removes on a
// machine after its launch (claiming and starting a warm machine).
var PostLaunchTagKeys = []string{tagInstance, tagName, tagPool, tagRequest, tagClaimPrefix + "0123abcd", tagWarm}
