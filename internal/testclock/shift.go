package testclock

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ShiftEnv names the variable that moves every stopped clock (At) to
// another date: a signed whole number of weeks, e.g. "-60w" or "+60w".
// Set, At(t) starts the clock about that many weeks from the real clock's
// now (t's year begins there), at t's weekday and time of day, whatever
// date t names.
//
// It exists to prove the tests do not depend on the calendar. A test that
// stops a clock at a date and hands it to the code under test passes
// whatever that date is — unless some part of that code reads the real
// clock instead (a store measuring retention on time.Now beside an engine
// on the test's clock). Such a test passes while its date is near today
// and fails once the calendar moves on; run with the clocks a year in the
// past or the future, it fails at once. `make test` runs its race pass
// with the clocks moved back (the way every such date ages), and
// `make test-dates` runs the tests both ways.
//
// A test that needs its dates as written (a parser's fixture, a fixed
// token) does not use At for them: it uses the time.Time itself.
const ShiftEnv = "RUNFLEET_TEST_CLOCK_SHIFT"

var shift = sync.OnceValues(func() (time.Duration, error) {
	return parseShift(os.Getenv(ShiftEnv))
})

// Shift is how far ShiftEnv moves a stopped clock from now: zero when
// unset. A malformed value panics: a test run that was asked to move its
// clocks must not pass without moving them.
func Shift() time.Duration {
	d, err := shift()
	if err != nil {
		panic(err)
	}
	return d
}

// parseShift reads "-60w", "+60w" or "60w" (weeks); "" is zero.
func parseShift(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	weeks, ok := strings.CutSuffix(s, "w")
	n, err := strconv.Atoi(strings.TrimPrefix(weeks, "+"))
	if !ok || err != nil || n == 0 {
		return 0, fmt.Errorf("testclock: %s=%q: want a signed non-zero number of weeks, e.g. -60w", ShiftEnv, s)
	}
	return time.Duration(n) * week, nil
}

const week = 7 * 24 * time.Hour

// moved returns t moved by whole weeks so that its year's first day
// lands within half a week of now+by. Every date of one year moves by the
// same weeks, so two clocks a test stops at dates of one year keep exactly
// the distance between them; each keeps its weekday and time of day.
func moved(t, now time.Time, by time.Duration) time.Time {
	if by == 0 {
		return t
	}
	newYear := time.Date(t.Year(), time.January, 1, 0, 0, 0, 0, t.Location())
	weeks := math.Round(float64(now.Add(by).Sub(newYear)) / float64(week))
	return t.Add(time.Duration(weeks) * week)
}
