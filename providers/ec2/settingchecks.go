package ec2

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runfleet/runfleet/providers/settings"
)

// The checks of setting values only EC2 knows. Each reads one key through
// the shared reader, which reports wrong types and keeps every problem.

// readPattern reads an optional string that must match re; want describes
// it.
func readPattern(r *settings.Reader, key string, re *regexp.Regexp, want string) string {
	s := r.String(key)
	if s != "" && !re.MatchString(s) {
		r.Fail(key, "want %s, got %q", want, s)
	}
	return s
}

func readLaunchTemplate(r *settings.Reader, key string) string {
	s := r.String(key)
	if s != "" && !launchTemplateIDPattern.MatchString(s) && !launchTemplateNamePattern.MatchString(s) {
		r.Fail(key, "want a launch template id (lt-…) or name (3–128 letters, digits or ( ) . / _ -), got %q", s)
	}
	return s
}

func readInstanceProfile(r *settings.Reader, key string) string {
	s := r.String(key)
	if s != "" && !instanceProfileARNPattern.MatchString(s) && !instanceProfileNamePattern.MatchString(s) {
		r.Fail(key, "want an instance profile name or ARN, got %q", s)
	}
	return s
}

// readDistinct reads a list of distinct strings each matching re.
func readDistinct(r *settings.Reader, key string, re *regexp.Regexp, want string) []string {
	items := r.Strings(key)
	for i, s := range items {
		item := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case !re.MatchString(s):
			r.Fail(item, "want %s, got %v", want, s)
		case slices.Contains(items[:i], s):
			r.Fail(item, "%q is listed twice", s)
		}
	}
	return items
}

func readVolumeSize(r *settings.Reader, key string) int32 {
	f, ok := r.Float(key)
	if !ok {
		return 0
	}
	if f != math.Trunc(f) || f < 1 || f > maxRootVolumeGiB {
		r.Fail(key, "want a size in GiB between 1 and %d, got %v", maxRootVolumeGiB, f)
		return 0
	}
	return int32(f)
}

// readTags reads extra tags. The keys runfleet sets itself, and the aws:
// prefix AWS reserves, are refused rather than silently overridden.
func readTags(r *settings.Reader, key string) map[string]string {
	m := r.Map(key)
	if m == nil {
		return nil
	}
	if len(m) > maxExtraTags {
		r.Fail(key, "at most %d tags (EC2 allows 50 per resource and runfleet sets up to %d), got %d", maxExtraTags, maxRunfleetTags, len(m))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		field := key + "." + k
		switch {
		case k == "" || len(k) > maxTagKeyLength:
			r.Fail(field, "tag keys are 1–%d characters", maxTagKeyLength)
			continue
		case k == tagName || strings.HasPrefix(k, tagPrefix):
			r.Fail(field, "runfleet sets %s and the %s* tags itself", tagName, tagPrefix)
			continue
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			r.Fail(field, "the aws: prefix is reserved by AWS")
			continue
		}
		var value string
		switch t := m[k].(type) {
		case string:
			value = t
		case int:
			value = strconv.Itoa(t)
		case bool:
			value = strconv.FormatBool(t)
		default:
			r.Fail(field, "want a string value, got %v", m[k])
			continue
		}
		if len(value) > maxTagValueLength {
			r.Fail(field, "tag values are at most %d characters", maxTagValueLength)
			continue
		}
		out[k] = value
	}
	return out
}
