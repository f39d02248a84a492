package settings

import (
	"encoding/json"
	"fmt"
)

// Strings returns key's value, a list of strings; nil when absent. A
// problem with one item names it ("subnet_ids[1]").
func (r *Reader) Strings(key string) []string {
	v, ok := r.lookup(key)
	if !ok {
		return nil
	}
	switch list := v.(type) {
	case []string: // settings built in code rather than decoded
		return list
	case []any:
		out := make([]string, 0, len(list))
		for i, item := range list {
			s, isString := item.(string)
			if !isString {
				r.Fail(fmt.Sprintf("%s[%d]", key, i), "want a string, got %v", item)
				continue
			}
			out = append(out, s)
		}
		if len(out) < len(list) {
			return nil
		}
		return out
	default:
		r.Fail(key, "want a list of strings, got %v", v)
		return nil
	}
}

// Map returns key's value, a map with string keys (what YAML and JSON
// decoders produce for an object); nil when absent.
func (r *Reader) Map(key string) map[string]any {
	v, ok := r.lookup(key)
	if !ok {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.Fail(key, "want a map, got %v", v)
		return nil
	}
	return m
}

// JSON returns key's value encoded as JSON, for settings a provider decodes
// into its own types or passes on untouched; nil when absent.
func (r *Reader) JSON(key string) json.RawMessage {
	v, ok := r.lookup(key)
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		// YAML maps with non-string keys, for one.
		r.Fail(key, "cannot be expressed as JSON: %v", err)
		return nil
	}
	return raw
}
