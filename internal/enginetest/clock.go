package enginetest

import "github.com/runfleet/runfleet/internal/testclock"

// Clock is the one fake clock (testclock.Clock) under the name the engine
// tests use: its zero value runs with real time, ahead by what a test moved
// it.
type Clock = testclock.Clock
