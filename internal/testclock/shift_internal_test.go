package testclock

import (
	"testing"
	"time"
)

func TestParseShift(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"-60w", -60 * week, false},
		{"+60w", 60 * week, false},
		{"3w", 3 * week, false},
		{"0w", 0, true},
		{"-60d", 0, true},
		{"60", 0, true},
		{"w", 0, true},
	} {
		got, err := parseShift(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("parseShift(%q) = %v, %v; want %v (error: %t)", c.in, got, err, c.want, c.bad)
		}
	}
}

// A moved clock keeps its weekday and time of day, its year starts within
// half a week of now+by, and two dates of one year keep their distance.
func TestMovedKeepsWeekdayAndTimeOfDay(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 42, 0, 0, time.UTC)
	for _, given := range []time.Time{
		time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC),
		time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		for _, by := range []time.Duration{-60 * week, 60 * week} {
			got := moved(given, now, by)
			if got.Weekday() != given.Weekday() || got.Sub(got.Truncate(24*time.Hour)) != given.Sub(given.Truncate(24*time.Hour)) {
				t.Errorf("moved(%v, %v) = %v: weekday or time of day changed", given, by, got)
			}
			newYear := time.Date(given.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
			if d := moved(newYear, now, by).Sub(now.Add(by)); d < -week/2 || d > week/2 {
				t.Errorf("moved(%v, %v): its year starts %v from now%+v", given, by, d, by)
			}
			later := given.Add(200 * 24 * time.Hour)
			if later.Year() == given.Year() && moved(later, now, by).Sub(got) != later.Sub(given) {
				t.Errorf("moved(%v, %v): two dates of one year drifted apart", given, by)
			}
		}
		if got := moved(given, now, 0); !got.Equal(given) {
			t.Errorf("moved without a shift = %v, want %v", got, given)
		}
	}
}
