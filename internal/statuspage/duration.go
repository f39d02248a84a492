package statuspage

import (
	"fmt"
	"time"
)

// HumanDuration writes d the way people read ages: its two largest
// units, whole — "230ms", "4s", "3m12s", "2h5m", "7d", "3d4h". Negative durations
// read as their magnitude; the caller says "ago" or "in".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	const day = 24 * time.Hour
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", int(d/time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return twoUnits(int(d/time.Minute), "m", int(d%time.Minute/time.Second), "s")
	case d < day:
		return twoUnits(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "m")
	default:
		return twoUnits(int(d/day), "d", int(d%day/time.Hour), "h")
	}
}

func twoUnits(big int, bigUnit string, small int, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d%s", big, bigUnit)
	}
	return fmt.Sprintf("%d%s%d%s", big, bigUnit, small, smallUnit)
}

// Relative says when t is from at: "4s ago", "in 4s", or "-" for an
// unknown instant.
func Relative(t, at time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := at.Sub(t); d >= 0 {
		return HumanDuration(d) + " ago"
	}
	return "in " + HumanDuration(t.Sub(at))
}
