package ec2

// DefaultWarmRunnerVersion is exported to the tests.
const DefaultWarmRunnerVersion = defaultWarmRunnerVersion
