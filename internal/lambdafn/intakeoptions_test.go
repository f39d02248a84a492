package lambdafn

import (
	"reflect"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/wiring"
)

// The webhook function's intake options are the ones embedded mode's
// wiring makes from the same config, every pool setting included.
func TestIntakeOptionsMatchWiring(t *testing.T) {
	cfg := &config.Config{
		ControllerID: "ctl",
		Engine:       config.Engine{DeleteBackoffMin: 2 * time.Second, DeleteBackoffMax: time.Minute},
		Pools: []config.Pool{
			{
				Name: "linux-x64", Owner: "octo-org/app", Labels: []string{"self-hosted", "linux"},
				MinIdle: 1, MaxRunners: 7, RunnerGroup: "ci", BootstrapTimeout: 9 * time.Minute, ProviderTimeout: 3 * time.Minute,
				Provider: config.Provider{Type: "simulated"},
			},
			{Name: "arm64", Owner: "enterprise:acme", Labels: []string{"arm64"}, MaxRunners: 2},
		},
	}
	// Every field of a pool must be set above, or a field wiring copies and
	// intakeOptions forgets would pass unnoticed.
	for i, p := range intakeOptions(cfg).Pools[:1] {
		v := reflect.ValueOf(p)
		for f := range v.NumField() {
			if name := v.Type().Field(f).Name; name != "ID" && v.Field(f).IsZero() {
				t.Fatalf("pool %d: field %s is not set by the test config", i, name)
			}
		}
	}
	if got, want := intakeOptions(cfg), wiring.IntakeOptions(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("intakeOptions = %+v\nwiring.IntakeOptions = %+v", got, want)
	}
}
