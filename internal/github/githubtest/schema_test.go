package githubtest_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// schemaChecker validates JSON values against the OpenAPI 3.0 schema subset
// GitHub's REST description uses. Every keyword is either checked or listed
// in annotationKeywords with the reason it cannot affect validity; any other
// keyword is reported, so a constraint is never skipped silently.
type schemaChecker struct {
	doc *description
}

// annotationKeywords carry documentation, not constraints.
var annotationKeywords = map[string]bool{
	"title": true, "description": true, "example": true, "examples": true,
	"default": true, "deprecated": true, "externalDocs": true,
	// readOnly/writeOnly only say which direction a property travels.
	"readOnly": true, "writeOnly": true,
	// GitHub's own annotations (x-github-breaking-changes, ...).
}

// check returns every way value violates schema; at names the value.
func (c *schemaChecker) check(schema map[string]any, value any, at string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		resolved, err := c.doc.ref(ref)
		if err != nil {
			return []string{fmt.Sprintf("%s: %v", at, err)}
		}
		m, ok := resolved.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: $ref %s is not a schema", at, ref)}
		}
		return c.check(m, value, at)
	}
	var errs []string
	for k := range schema {
		if !c.known(k) {
			errs = append(errs, fmt.Sprintf("%s: schema keyword %q is not supported by the checker", at, k))
		}
	}
	if value == nil {
		// OpenAPI 3.0: null is allowed only by nullable: true, or by an
		// anyOf/oneOf branch that is nullable. In the second case null
		// usually matches several branches (GitHub's validation-error
		// "value" has three nullable ones), which a literal "exactly one"
		// reading of oneOf would refuse; GitHub clearly means "may be
		// null", so null is accepted there.
		if schema["nullable"] == true || c.combinatorAllowsNull(schema) {
			return errs
		}
		if _, typed := schema["type"]; typed {
			return append(errs, fmt.Sprintf("%s: null is not allowed (not nullable)", at))
		}
	}
	if t, ok := schema["type"].(string); ok && value != nil {
		if !hasType(value, t) {
			return append(errs, fmt.Sprintf("%s: %s is not of type %s", at, describe(value), t))
		}
	}
	if enum, ok := schema["enum"].([]any); ok && value != nil && !inEnum(enum, value) {
		errs = append(errs, fmt.Sprintf("%s: %s is not one of %v", at, describe(value), enum))
	}
	if f, ok := schema["format"].(string); ok && value != nil {
		errs = append(errs, checkFormat(f, value, at)...)
	}
	errs = append(errs, checkBounds(schema, value, at)...)
	errs = append(errs, c.checkObject(schema, value, at)...)
	errs = append(errs, c.checkArray(schema, value, at)...)
	errs = append(errs, c.checkCombinators(schema, value, at)...)
	return errs
}

func (c *schemaChecker) known(keyword string) bool {
	switch keyword {
	case "type", "nullable", "properties", "required", "additionalProperties", "items",
		"enum", "format", "anyOf", "oneOf", "allOf", "minItems", "maxItems",
		"minLength", "maxLength", "minimum", "maximum", "pattern":
		return true
	}
	return annotationKeywords[keyword] || strings.HasPrefix(keyword, "x-")
}

func (c *schemaChecker) checkObject(schema map[string]any, value any, at string) []string {
	obj, ok := value.(map[string]any)
	if !ok {
		return nil
	}
	var errs []string
	if req, ok := schema["required"].([]any); ok {
		for _, name := range req {
			if _, present := obj[fmt.Sprint(name)]; !present {
				errs = append(errs, fmt.Sprintf("%s: required property %q is missing", at, name))
			}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := props[k].(map[string]any); ok {
			errs = append(errs, c.check(ps, obj[k], at+"."+k)...)
			continue
		}
		switch extra := schema["additionalProperties"].(type) {
		case bool:
			if !extra {
				errs = append(errs, fmt.Sprintf("%s: property %q is not allowed", at, k))
			}
		case map[string]any:
			errs = append(errs, c.check(extra, obj[k], at+"."+k)...)
		}
		// Without additionalProperties, OpenAPI allows other properties.
	}
	return errs
}

func (c *schemaChecker) checkArray(schema map[string]any, value any, at string) []string {
	arr, ok := value.([]any)
	if !ok {
		return nil
	}
	var errs []string
	if n, ok := intKeyword(schema, "minItems"); ok && len(arr) < n {
		errs = append(errs, fmt.Sprintf("%s: %d items, fewer than minItems %d", at, len(arr), n))
	}
	if n, ok := intKeyword(schema, "maxItems"); ok && len(arr) > n {
		errs = append(errs, fmt.Sprintf("%s: %d items, more than maxItems %d", at, len(arr), n))
	}
	if items, ok := schema["items"].(map[string]any); ok {
		for i, v := range arr {
			errs = append(errs, c.check(items, v, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return errs
}

func (c *schemaChecker) checkCombinators(schema map[string]any, value any, at string) []string {
	var errs []string
	if all, ok := schema["allOf"].([]any); ok {
		for i, sub := range all {
			if m, ok := sub.(map[string]any); ok {
				errs = append(errs, c.check(m, value, fmt.Sprintf("%s(allOf %d)", at, i))...)
			}
		}
	}
	if anyOf, ok := schema["anyOf"].([]any); ok && c.matching(anyOf, value, at) == 0 {
		errs = append(errs, fmt.Sprintf("%s: %s matches none of anyOf", at, describe(value)))
	}
	if oneOf, ok := schema["oneOf"].([]any); ok {
		if n := c.matching(oneOf, value, at); n != 1 {
			errs = append(errs, fmt.Sprintf("%s: %s matches %d of oneOf, want exactly 1", at, describe(value), n))
		}
	}
	return errs
}

func (c *schemaChecker) matching(schemas []any, value any, at string) int {
	n := 0
	for _, sub := range schemas {
		if m, ok := sub.(map[string]any); ok && len(c.check(m, value, at)) == 0 {
			n++
		}
	}
	return n
}

func (c *schemaChecker) combinatorAllowsNull(schema map[string]any) bool {
	for _, key := range []string{"anyOf", "oneOf"} {
		subs, _ := schema[key].([]any)
		if c.matching(subs, nil, "") > 0 {
			return true
		}
	}
	return false
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, isInt := new(big.Int).SetString(n.String(), 10)
		return isInt
	case "null":
		return v == nil
	}
	return false
}

// checkFormat checks the formats whose violation would mislead a client;
// others (email, ipv4, ...) never occur in the fake's bodies.
func checkFormat(format string, v any, at string) []string {
	s, isString := v.(string)
	switch {
	case format == "date-time" && isString:
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return []string{fmt.Sprintf("%s: %q is not an RFC 3339 date-time", at, s)}
		}
	case format == "uri" && isString:
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return []string{fmt.Sprintf("%s: %q is not an absolute URI", at, s)}
		}
	case format == "int64":
		if n, ok := v.(json.Number); ok {
			if _, err := n.Int64(); err != nil {
				return []string{fmt.Sprintf("%s: %s does not fit int64", at, n)}
			}
		}
	}
	return nil
}

func inEnum(enum []any, v any) bool {
	return slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) && sameKind(e, v) })
}

func sameKind(a, b any) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }

func intKeyword(schema map[string]any, key string) (int, bool) {
	n, ok := schema[key].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return int(i), err == nil
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return fmt.Sprintf("%T value", v)
	}
	return string(b)
}

// checkBounds checks minLength/maxLength, minimum/maximum and pattern.
func checkBounds(schema map[string]any, value any, at string) []string {
	var errs []string
	if str, ok := value.(string); ok {
		n := utf8.RuneCountInString(str)
		if min, ok := intKeyword(schema, "minLength"); ok && n < min {
			errs = append(errs, fmt.Sprintf("%s: %q is shorter than minLength %d", at, str, min))
		}
		if max, ok := intKeyword(schema, "maxLength"); ok && n > max {
			errs = append(errs, fmt.Sprintf("%s: %q is longer than maxLength %d", at, str, max))
		}
		if pattern, ok := schema["pattern"].(string); ok {
			re, err := regexp.Compile(pattern)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("%s: pattern %q is not a Go regexp: %v", at, pattern, err))
			case !re.MatchString(str):
				errs = append(errs, fmt.Sprintf("%s: %q does not match pattern %q", at, str, pattern))
			}
		}
	}
	if num, ok := value.(json.Number); ok {
		v, _ := new(big.Float).SetString(num.String())
		for _, bound := range []struct {
			key  string
			fail int // the Cmp result that violates it
		}{{"minimum", -1}, {"maximum", 1}} {
			limit, ok := schema[bound.key].(json.Number)
			if !ok || v == nil {
				continue
			}
			if l, _ := new(big.Float).SetString(limit.String()); l != nil && v.Cmp(l) == bound.fail {
				errs = append(errs, fmt.Sprintf("%s: %s is beyond %s %s", at, num, bound.key, limit))
			}
		}
	}
	return errs
}
