package simulated

import (
	"time"

	"github.com/runfleet/runfleet/providers/settings"
)

// Options configure a simulated provider.
type Options struct {
	// CreateLatency and DeleteLatency are how long each call takes, plus a
	// uniformly random extra of up to LatencyJitter.
	CreateLatency time.Duration
	DeleteLatency time.Duration
	LatencyJitter time.Duration
	Faults        Faults
	// Seed makes failures, jitter and provider ids reproducible.
	Seed uint64
}

// Faults are the failures the provider injects. They can be changed while
// it runs (SetFaults), e.g. to let a stuck delete finally succeed.
type Faults struct {
	// CreateFailureRate and DeleteFailureRate are the probability (0..1)
	// that a call fails.
	CreateFailureRate float64
	DeleteFailureRate float64
	// AlwaysFailCreate and AlwaysFailDelete fail every call.
	AlwaysFailCreate bool
	AlwaysFailDelete bool
	// HangCreates and HangDeletes make calls block until their context ends,
	// like a provider binary that never exits.
	HangCreates bool
	HangDeletes bool
	// LeaveFailedMachines makes a failed or hung create leave a half-made
	// machine behind (status error), as real clouds do; the caller must
	// delete it by name.
	LeaveFailedMachines bool
	// FailCreateAsStatus reports a failed create as a returned instance with
	// status error instead of an error (both are failures in GARM's
	// contract). The half-made machine is left behind.
	FailCreateAsStatus bool
}

// settingKeys are the keys New accepts, in the order errors list them.
var settingKeys = []string{
	"create_latency", "delete_latency", "latency_jitter",
	"failure_rate", "create_failure_rate", "delete_failure_rate",
	"always_fail", "always_fail_create", "always_fail_delete",
	"hang_creates", "hang_deletes",
	"leave_failed_machines", "fail_create_as_status",
	"seed",
}

// ParseSettings reads a pool's provider settings (config
// pools[].provider.settings):
//
//	create_latency, delete_latency, latency_jitter  durations ("50ms")
//	failure_rate, create_failure_rate, delete_failure_rate  0..1
//	always_fail, always_fail_create, always_fail_delete  bool
//	hang_creates, hang_deletes  bool (block until the caller's context ends)
//	leave_failed_machines, fail_create_as_status  bool
//	seed  non-negative integer
//
// failure_rate sets both rates and create_/delete_failure_rate override it;
// always_fail fails both operations, always_fail_create/_delete one. A null
// value is as if the key were absent. Unknown keys are errors, every error
// names its key, and all of them are reported at once (errors.Join).
func ParseSettings(values map[string]any) (Options, error) {
	r := settings.NewReader(values, settingKeys...)
	var o Options
	o.CreateLatency = r.Duration("create_latency")
	o.DeleteLatency = r.Duration("delete_latency")
	o.LatencyJitter = r.Duration("latency_jitter")
	if rate, ok := readRate(r, "failure_rate"); ok {
		o.Faults.CreateFailureRate, o.Faults.DeleteFailureRate = rate, rate
	}
	if rate, ok := readRate(r, "create_failure_rate"); ok {
		o.Faults.CreateFailureRate = rate
	}
	if rate, ok := readRate(r, "delete_failure_rate"); ok {
		o.Faults.DeleteFailureRate = rate
	}
	always := r.Bool("always_fail")
	o.Faults.AlwaysFailCreate = always || r.Bool("always_fail_create")
	o.Faults.AlwaysFailDelete = always || r.Bool("always_fail_delete")
	o.Faults.HangCreates = r.Bool("hang_creates")
	o.Faults.HangDeletes = r.Bool("hang_deletes")
	o.Faults.LeaveFailedMachines = r.Bool("leave_failed_machines")
	o.Faults.FailCreateAsStatus = r.Bool("fail_create_as_status")
	o.Seed = r.Uint64("seed")
	if err := r.Err(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// readRate reads a probability; ok is false when key is absent or wrong.
func readRate(r *settings.Reader, key string) (rate float64, ok bool) {
	rate, ok = r.Float(key)
	if ok && (rate < 0 || rate > 1) {
		r.Fail(key, "want a probability between 0 and 1, got %v", rate)
		return 0, false
	}
	return rate, ok
}
