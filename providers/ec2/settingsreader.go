package ec2

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// settingsReader converts loosely typed YAML or JSON values, keeping the
// first error.
type settingsReader struct {
	m   map[string]any
	err error
}

func (r *settingsReader) fail(key, format string, args ...any) {
	if r.err == nil {
		r.err = settingError(key, format, args...)
	}
}

func (r *settingsReader) string(key string) string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		r.fail(key, "want a string, got %v", v)
	}
	return s
}

// pattern reads an optional string that must match re; want describes it.
func (r *settingsReader) pattern(key string, re *regexp.Regexp, want string) string {
	s := r.string(key)
	if s != "" && !re.MatchString(s) {
		r.fail(key, "want %s, got %q", want, s)
	}
	return s
}

func (r *settingsReader) launchTemplate(key string) string {
	s := r.string(key)
	if s != "" && !launchTemplateIDPattern.MatchString(s) && !launchTemplateNamePattern.MatchString(s) {
		r.fail(key, "want a launch template id (lt-…) or name (3–128 letters, digits or ( ) . / _ -), got %q", s)
	}
	return s
}

func (r *settingsReader) instanceProfile(key string) string {
	s := r.string(key)
	if s != "" && !instanceProfileARNPattern.MatchString(s) && !instanceProfileNamePattern.MatchString(s) {
		r.fail(key, "want an instance profile name or ARN, got %q", s)
	}
	return s
}

// list reads a list of distinct strings each matching re.
func (r *settingsReader) list(key string, re *regexp.Regexp, want string) []string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		r.fail(key, "want a list of %s, got %v", want, v)
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, isString := item.(string)
		if !isString || !re.MatchString(s) {
			r.fail(fmt.Sprintf("%s[%d]", key, i), "want %s, got %v", want, item)
			return nil
		}
		if slices.Contains(out, s) {
			r.fail(fmt.Sprintf("%s[%d]", key, i), "%q is listed twice", s)
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (r *settingsReader) bool(key string) bool {
	v, ok := r.m[key]
	if !ok || v == nil {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.fail(key, "want true or false, got %v", v)
	}
	return b
}

func (r *settingsReader) volumeSize(key string) int32 {
	v, ok := r.m[key]
	if !ok || v == nil {
		return 0
	}
	f, isNumber := number(v)
	if !isNumber || f != math.Trunc(f) || f < 1 || f > maxRootVolumeGiB {
		r.fail(key, "want a size in GiB between 1 and %d, got %v", maxRootVolumeGiB, v)
		return 0
	}
	return int32(f)
}

// tags reads extra tags. The keys runfleet sets itself, and the aws: prefix
// AWS reserves, are refused rather than silently overridden.
func (r *settingsReader) tags(key string) map[string]string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.fail(key, "want a map of tag keys to values, got %v", v)
		return nil
	}
	if len(m) > maxExtraTags {
		r.fail(key, "at most %d tags (EC2 allows 50 per resource and runfleet sets 4), got %d", maxExtraTags, len(m))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		raw := m[k]
		field := key + "." + k
		switch {
		case k == "" || len(k) > maxTagKeyLength:
			r.fail(field, "tag keys are 1–%d characters", maxTagKeyLength)
			return nil
		case k == tagName || strings.HasPrefix(k, tagPrefix):
			r.fail(field, "runfleet sets %s and the %s* tags itself", tagName, tagPrefix)
			return nil
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			r.fail(field, "the aws: prefix is reserved by AWS")
			return nil
		}
		var value string
		switch t := raw.(type) {
		case string:
			value = t
		case int:
			value = strconv.Itoa(t)
		case bool:
			value = strconv.FormatBool(t)
		default:
			r.fail(field, "want a string value, got %v", raw)
			return nil
		}
		if len(value) > maxTagValueLength {
			r.fail(field, "tag values are at most %d characters", maxTagValueLength)
			return nil
		}
		out[k] = value
	}
	return out
}

// number accepts the numeric types YAML (int, float64) and JSON (float64)
// decoders produce.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	default:
		return 0, false
	}
}
