package simulated

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
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
// always_fail fails both operations, always_fail_create/_delete one. Unknown
// keys are errors, and every error names its key.
func ParseSettings(settings map[string]any) (Options, error) {
	var o Options
	var unknown []string
	for k := range settings {
		if !slices.Contains(settingKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Options{}, fmt.Errorf("unknown setting %s (known: %s)", strings.Join(unknown, ", "), strings.Join(settingKeys, ", "))
	}
	r := settingsReader{m: settings}
	o.CreateLatency = r.duration("create_latency")
	o.DeleteLatency = r.duration("delete_latency")
	o.LatencyJitter = r.duration("latency_jitter")
	if rate, ok := r.rate("failure_rate"); ok {
		o.Faults.CreateFailureRate, o.Faults.DeleteFailureRate = rate, rate
	}
	if rate, ok := r.rate("create_failure_rate"); ok {
		o.Faults.CreateFailureRate = rate
	}
	if rate, ok := r.rate("delete_failure_rate"); ok {
		o.Faults.DeleteFailureRate = rate
	}
	always := r.bool("always_fail")
	o.Faults.AlwaysFailCreate = always || r.bool("always_fail_create")
	o.Faults.AlwaysFailDelete = always || r.bool("always_fail_delete")
	o.Faults.HangCreates = r.bool("hang_creates")
	o.Faults.HangDeletes = r.bool("hang_deletes")
	o.Faults.LeaveFailedMachines = r.bool("leave_failed_machines")
	o.Faults.FailCreateAsStatus = r.bool("fail_create_as_status")
	o.Seed = r.seed("seed")
	if r.err != nil {
		return Options{}, r.err
	}
	return o, nil
}

// settingsReader converts loosely typed YAML or JSON values, keeping the
// first error.
type settingsReader struct {
	m   map[string]any
	err error
}

func (r *settingsReader) fail(key, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
	}
}

func (r *settingsReader) duration(key string) time.Duration {
	v, ok := r.m[key]
	if !ok {
		return 0
	}
	s, isString := v.(string)
	if !isString {
		r.fail(key, "want a duration such as \"50ms\", got %v", v)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		r.fail(key, "want a non-negative duration such as \"50ms\", got %q", s)
		return 0
	}
	return d
}

func (r *settingsReader) rate(key string) (float64, bool) {
	v, ok := r.m[key]
	if !ok {
		return 0, false
	}
	f, isNumber := number(v)
	if !isNumber || math.IsNaN(f) || f < 0 || f > 1 {
		r.fail(key, "want a probability between 0 and 1, got %v", v)
		return 0, false
	}
	return f, true
}

func (r *settingsReader) bool(key string) bool {
	v, ok := r.m[key]
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.fail(key, "want true or false, got %v", v)
	}
	return b
}

func (r *settingsReader) seed(key string) uint64 {
	v, ok := r.m[key]
	if !ok {
		return 0
	}
	f, isNumber := number(v)
	if !isNumber || f < 0 || f != math.Trunc(f) || f > math.MaxInt64 {
		r.fail(key, "want a non-negative integer, got %v", v)
		return 0
	}
	if i, isInt := v.(int); isInt {
		return uint64(i) // exact even above 2^53
	}
	return uint64(f)
}

// number accepts the numeric types YAML (int, float64) and JSON (float64)
// decoders produce.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	default:
		return 0, false
	}
}
