package settings

import (
	"math"
	"time"
)

// String returns key's value, which must be a string; "" when absent.
func (r *Reader) String(key string) string {
	v, ok := r.lookup(key)
	if !ok {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		r.Fail(key, "want a string, got %v", v)
	}
	return s
}

// Bool returns key's value, which must be true or false; false when absent.
// Strings such as "yes" are refused: YAML 1.2 reads them as strings, and a
// user who quoted "false" should not get true.
func (r *Reader) Bool(key string) bool {
	v, ok := r.lookup(key)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.Fail(key, "want true or false, got %v", v)
	}
	return b
}

// Duration returns key's value, a non-negative duration written as Go
// parses it ("50ms", "1m30s"); 0 when absent.
func (r *Reader) Duration(key string) time.Duration {
	return r.duration(key, "non-negative", 0)
}

// PositiveDuration is Duration refusing 0, for settings where 0 would mean
// "fail at once" rather than "none"; it still returns 0 when key is absent,
// for the caller to apply its default.
func (r *Reader) PositiveDuration(key string) time.Duration {
	return r.duration(key, "positive", 1)
}

func (r *Reader) duration(key, want string, least time.Duration) time.Duration {
	v, ok := r.lookup(key)
	if !ok {
		return 0
	}
	s, isString := v.(string)
	if !isString {
		r.Fail(key, "want a duration such as \"50ms\", got %v", v)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < least {
		r.Fail(key, "want a %s duration such as \"50ms\", got %q", want, s)
		return 0
	}
	return d
}

// Float returns key's value, any number but NaN; ok is false when key is
// absent or its value is not a number.
func (r *Reader) Float(key string) (f float64, ok bool) {
	v, present := r.lookup(key)
	if !present {
		return 0, false
	}
	var n float64
	switch t := v.(type) {
	case int:
		n = float64(t)
	case int64:
		n = float64(t)
	case uint64:
		n = float64(t)
	case float64:
		n = t
	default:
		r.Fail(key, "want a number, got %v", v)
		return 0, false
	}
	if math.IsNaN(n) {
		r.Fail(key, "want a number, got %v", v)
		return 0, false
	}
	return n, true
}

// Uint64 returns key's value, a non-negative integer; 0 when absent. It is
// exact over the whole uint64 range when the decoder produced an integer
// type; JSON decoders produce float64, exact only up to 2^53.
func (r *Reader) Uint64(key string) uint64 {
	v, ok := r.lookup(key)
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case int:
		if n >= 0 {
			return uint64(n)
		}
	case int64:
		if n >= 0 {
			return uint64(n)
		}
	case uint64:
		return n
	case float64:
		// 1<<64 is the first float64 that no longer fits.
		if n >= 0 && n < 1<<64 && n == math.Trunc(n) {
			return uint64(n)
		}
	}
	r.Fail(key, "want a non-negative integer, got %v", v)
	return 0
}
