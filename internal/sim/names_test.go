package sim

import "testing"

// The budget charges each call to the job named by its instance or runner
// name, whatever the pool is called and however often the job was served.
func TestJobOfInstance(t *testing.T) {
	for name, want := range map[string]int64{
		"runfleet-linux-1042-1":       1042,
		"runfleet-gpu-1037-1-r2":      1037,
		"runfleet-my-pool-12-3-r11":   12,
		"runfleet-linux-warm-0a1b2c3": 0,
		"static-builder-1":            0,
		"runfleet-linux":              0,
	} {
		if got := jobOfInstance(name); got != want {
			t.Errorf("jobOfInstance(%q) = %d, want %d", name, got, want)
		}
	}
}
