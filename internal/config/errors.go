package config

import "fmt"

// FieldError is one problem with one field of the configuration. Field is
// the field's path as written in YAML, e.g. "pools[1].max_runners". Load and
// Parse return every FieldError they find, joined with errors.Join, so a
// user fixes the whole file in one pass.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return e.Field + ": " + e.Problem
}

// problems collects FieldErrors in the order they are found.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// poolField names a field of the i-th pool.
func poolField(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("pools[%d]", i)
	}
	return fmt.Sprintf("pools[%d].%s", i, name)
}
