package runner

import (
	"fmt"
	"math"
	"time"
)

// Cost is what an instance's machine cost, computed once, when the
// instance is deleted: its hourly price times the seconds it ran. A cost
// that could not be computed (no price for the machine) says why in
// Unknown and counts nothing; it never keeps a delete from completing.
type Cost struct {
	// USD is the cost in US dollars; 0 with Unknown set when not known.
	USD float64 `json:"usd"`
	// USDPerHour is the price the cost was computed from.
	USDPerHour float64 `json:"usd_per_hour,omitempty"`
	// Seconds is how long the machine ran: from the start of the create
	// that made it (MachineAt) to the delete that removed it.
	Seconds int64 `json:"seconds"`
	// Unknown says why there is no cost; "" when USD is the cost.
	Unknown string `json:"unknown,omitempty"`
}

// Known reports whether USD is a cost rather than a gap.
func (c *Cost) Known() bool { return c != nil && c.Unknown == "" }

// Price is the answer of a price source for one machine: USD per hour, or
// the error that says why there is none.
type Price struct {
	USDPerHour float64
	Err        error
}

// CostOf is the cost of inst's machine ended at end, at price. An
// instance whose create never made a machine (no MachineAt) cost nothing;
// a missing price or a clock that runs backwards gives an unknown cost,
// never an error.
func CostOf(inst *Instance, price Price, end time.Time) Cost {
	if inst.MachineAt.IsZero() {
		return Cost{}
	}
	seconds := int64(math.Ceil(end.Sub(inst.MachineAt).Seconds()))
	if seconds < 0 {
		return Cost{Unknown: fmt.Sprintf("the machine ended (%s) before it was made (%s)", end.UTC().Format(time.RFC3339), inst.MachineAt.UTC().Format(time.RFC3339))}
	}
	if price.Err != nil {
		return Cost{Seconds: seconds, Unknown: price.Err.Error()}
	}
	if price.USDPerHour < 0 || math.IsNaN(price.USDPerHour) || math.IsInf(price.USDPerHour, 0) {
		return Cost{Seconds: seconds, Unknown: fmt.Sprintf("the price %v USD/hour is not a price", price.USDPerHour)}
	}
	return Cost{
		USD:        roundMicros(price.USDPerHour * float64(seconds) / 3600),
		USDPerHour: price.USDPerHour,
		Seconds:    seconds,
	}
}

// roundMicros keeps a cost to a millionth of a dollar: sums of many
// records then add up the same in every store and report.
func roundMicros(usd float64) float64 { return math.Round(usd*1e6) / 1e6 }
