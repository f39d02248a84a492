package sim

import "time"

// Epoch is where every bolt run's virtual clock starts, so a seed replays
// with the same timestamps. It is a Monday at midnight UTC.
var Epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
