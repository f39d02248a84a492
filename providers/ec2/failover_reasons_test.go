package ec2

import (
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/metrics"
)

// Each capacity failover is counted by its EC2 error code: a code the
// metric's label set does not know would be counted as "other".
func TestEveryFailoverCodeIsAMetricReason(t *testing.T) {
	for code := range capacityCodes {
		if !slices.Contains(metrics.FailoverReasons, code) {
			t.Errorf("failover code %s is not in metrics.FailoverReasons", code)
		}
	}
	if got, want := len(metrics.FailoverReasons), len(capacityCodes)+1; got != want {
		t.Errorf("metrics.FailoverReasons has %d values, want the %d codes and other", got, want)
	}
}
