// Package settings reads a pool's provider settings (config
// pools[].provider.settings): a loosely typed map as YAML and JSON decoders
// produce it. Every provider checks its keys and values the same way, so a
// user sees the same messages whichever provider a pool uses.
package settings

import (
	"errors"
	"fmt"
	"slices"
)

// Reader converts the values of one settings map, collecting a problem for
// each key it cannot convert rather than stopping at the first, so a user
// fixes a config in one pass. A getter that records a problem returns the
// zero value; Err reports every problem.
//
// A key set to null (YAML "key:" with no value) reads as absent.
type Reader struct {
	values   map[string]any
	problems []error
}

// NewReader returns a reader of values. Keys not among known are problems,
// reported with the known keys in the order given.
func NewReader(values map[string]any, known ...string) *Reader {
	r := &Reader{values: values}
	var unknown []string
	for k := range values {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		r.problems = append(r.problems, &UnknownKeysError{Unknown: unknown, Known: slices.Clone(known)})
	}
	return r
}

// Fail records a problem with key (a settings key, or a part of one such as
// "tags.team" or "subnet_ids[1]") for checks only the provider knows.
func (r *Reader) Fail(key, format string, args ...any) {
	r.problems = append(r.problems, &Error{Key: key, Problem: fmt.Sprintf(format, args...)})
}

// Failed reports whether a problem has been recorded for exactly key, so a
// check that follows a failed conversion can stay quiet instead of
// reporting the same mistake twice.
func (r *Reader) Failed(key string) bool {
	for _, p := range r.problems {
		if e, ok := p.(*Error); ok && e.Key == key {
			return true
		}
	}
	return false
}

// Err returns every problem recorded, unknown keys first and then in the
// order the keys were read, or nil. Each is an *Error or an
// *UnknownKeysError.
func (r *Reader) Err() error {
	return errors.Join(r.problems...)
}

// lookup returns key's value; ok is false when it is absent or null.
func (r *Reader) lookup(key string) (v any, ok bool) {
	v, ok = r.values[key]
	return v, ok && v != nil
}
