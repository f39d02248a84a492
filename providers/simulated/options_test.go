package simulated_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/providers/simulated"
)

func TestParseSettings(t *testing.T) {
	got, err := simulated.ParseSettings(map[string]any{
		"create_latency":        "50ms",
		"delete_latency":        "1s",
		"latency_jitter":        "5ms",
		"failure_rate":          0.25,
		"delete_failure_rate":   1, // YAML decodes 1 as int
		"always_fail_create":    true,
		"hang_deletes":          true,
		"leave_failed_machines": true,
		"seed":                  42,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := simulated.Options{
		CreateLatency: 50 * time.Millisecond,
		DeleteLatency: time.Second,
		LatencyJitter: 5 * time.Millisecond,
		Faults: simulated.Faults{
			CreateFailureRate:   0.25,
			DeleteFailureRate:   1,
			AlwaysFailCreate:    true,
			HangDeletes:         true,
			LeaveFailedMachines: true,
		},
		Seed: 42,
	}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParseSettingsShorthands(t *testing.T) {
	cases := []struct {
		settings map[string]any
		want     simulated.Faults
	}{
		{nil, simulated.Faults{}},
		// YAML "hang_creates:" with no value is null: as if absent, like
		// every provider's settings.
		{map[string]any{"hang_creates": nil}, simulated.Faults{}},
		{map[string]any{"always_fail": true}, simulated.Faults{AlwaysFailCreate: true, AlwaysFailDelete: true}},
		{map[string]any{"always_fail": false, "always_fail_delete": true}, simulated.Faults{AlwaysFailDelete: true}},
		{map[string]any{"failure_rate": 0.5}, simulated.Faults{CreateFailureRate: 0.5, DeleteFailureRate: 0.5}},
		{map[string]any{"failure_rate": 0.5, "create_failure_rate": 0}, simulated.Faults{DeleteFailureRate: 0.5}},
		{map[string]any{"hang_creates": true, "fail_create_as_status": true}, simulated.Faults{HangCreates: true, FailCreateAsStatus: true}},
	}
	for _, c := range cases {
		got, err := simulated.ParseSettings(c.settings)
		if err != nil {
			t.Fatalf("%v: %v", c.settings, err)
		}
		if got.Faults != c.want {
			t.Errorf("%v: got %+v, want %+v", c.settings, got.Faults, c.want)
		}
	}
}

func TestParseSettingsSeedFromJSON(t *testing.T) {
	// JSON decoders produce float64 for every number.
	got, err := simulated.ParseSettings(map[string]any{"seed": float64(7)})
	if err != nil || got.Seed != 7 {
		t.Errorf("seed = %d, %v", got.Seed, err)
	}
}

func TestParseSettingsErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"latency": "1s", "creat_latency": "1s"}, "unknown setting creat_latency, latency (known: create_latency, "},
		{map[string]any{"create_latency": "fast"}, `create_latency: want a non-negative duration such as "50ms", got "fast"`},
		{map[string]any{"delete_latency": "-1s"}, `delete_latency: want a non-negative duration such as "50ms", got "-1s"`},
		{map[string]any{"latency_jitter": 50}, `latency_jitter: want a duration such as "50ms", got 50`},
		{map[string]any{"failure_rate": 1.5}, "failure_rate: want a probability between 0 and 1, got 1.5"},
		{map[string]any{"create_failure_rate": -0.1}, "create_failure_rate: want a probability between 0 and 1, got -0.1"},
		{map[string]any{"delete_failure_rate": "half"}, "delete_failure_rate: want a number, got half"},
		{map[string]any{"always_fail": "yes"}, "always_fail: want true or false, got yes"},
		{map[string]any{"always_fail_create": 1}, "always_fail_create: want true or false, got 1"},
		{map[string]any{"always_fail_delete": "true"}, "always_fail_delete: want true or false, got true"},
		{map[string]any{"hang_deletes": 0}, "hang_deletes: want true or false, got 0"},
		{map[string]any{"leave_failed_machines": "no"}, "leave_failed_machines: want true or false, got no"},
		{map[string]any{"fail_create_as_status": 2}, "fail_create_as_status: want true or false, got 2"},
		{map[string]any{"seed": -1}, "seed: want a non-negative integer, got -1"},
		{map[string]any{"seed": 1.5}, "seed: want a non-negative integer, got 1.5"},
		{map[string]any{"seed": "1"}, "seed: want a non-negative integer, got 1"},
	}
	for _, c := range cases {
		_, err := simulated.ParseSettings(c.settings)
		if err == nil {
			t.Errorf("%v: accepted", c.settings)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v:\n got  %q\n want %q", c.settings, err, c.want)
		}
	}
}

func TestNewNamesTheProvider(t *testing.T) {
	_, err := simulated.New(map[string]any{"failure_rate": 2})
	if err == nil || err.Error() != "simulated provider: failure_rate: want a probability between 0 and 1, got 2" {
		t.Errorf("got %v", err)
	}
	if p, err := simulated.New(nil); err != nil || p == nil {
		t.Errorf("New(nil) = %v, %v", p, err)
	}
}

func TestParseSettingsReportsEveryProblem(t *testing.T) {
	_, err := simulated.ParseSettings(map[string]any{"seed": -1, "hang_creates": "yes", "latncy": "1s"})
	want := "unknown setting latncy (known: create_latency, delete_latency, latency_jitter, failure_rate, create_failure_rate, delete_failure_rate, always_fail, always_fail_create, always_fail_delete, hang_creates, hang_deletes, leave_failed_machines, fail_create_as_status, seed)\n" +
		"hang_creates: want true or false, got yes\n" +
		"seed: want a non-negative integer, got -1"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
