package ec2

// DefaultWarmRunnerVersion is exported to the tests.
const DefaultWarmRunnerVersion = defaultWarmRunnerVersion

// PostLaunchTagKeys are the tag keys the provider writes or removes on a
// machine after its launch (claiming and starting a warm machine).
var PostLaunchTagKeys = []string{tagInstance, tagName, tagPool, tagRequest, tagClaimPrefix + "0123abcd", tagWarm}
