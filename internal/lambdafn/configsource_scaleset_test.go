package lambdafn

import (
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

// The stack runs no listener: a scale-set pool is refused, naming the
// field, and a webhook pool passes.
func TestTheStackRefusesScaleSetPools(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{{Name: "hooks"}, {Name: "scale", ScaleSet: &config.ScaleSet{Name: "linux"}}}}
	var fe *config.FieldError
	if err := refuseScaleSetPools(cfg); !errors.As(err, &fe) || fe.Field != "pools[1].scale_set" {
		t.Fatalf("err = %v, want a field error on pools[1].scale_set", err)
	}
	if err := refuseScaleSetPools(&config.Config{Pools: cfg.Pools[:1]}); err != nil {
		t.Fatalf("a webhook pool: %v", err)
	}
}
