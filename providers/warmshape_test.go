package providers_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/providers"
)

type plainProvider struct{ providers.Provider }

type sizer struct{ plainProvider }

func (sizer) RefillWarm(context.Context, string, string) (providers.WarmRefill, error) {
	return providers.WarmRefill{}, nil
}

func (sizer) RefillWarmTo(context.Context, string, string, int) (providers.WarmRefill, error) {
	return providers.WarmRefill{}, nil
}

type keeper struct {
	sizer
	on bool
}

func (k keeper) KeepsWarm() bool { return k.on }

func TestKeepsStopped(t *testing.T) {
	for _, c := range []struct {
		name string
		p    providers.Provider
		want bool
	}{
		{"no warm pool at all", plainProvider{}, false},
		{"a sizer keeps them", sizer{}, true},
		{"a keeper whose warm pool is off", keeper{on: false}, false},
		{"a keeper whose warm pool is on", keeper{on: true}, true},
	} {
		if got := providers.KeepsStopped(c.p); got != c.want {
			t.Errorf("%s: KeepsStopped = %v, want %v", c.name, got, c.want)
		}
	}
}
