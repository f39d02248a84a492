package settings

import (
	"fmt"
	"strings"
)

// Error is a problem with one setting.
type Error struct {
	// Key names the setting, or the part of it at fault ("tags.team",
	// "subnet_ids[1]").
	Key     string
	Problem string
}

func (e *Error) Error() string { return e.Key + ": " + e.Problem }

// UnknownKeysError lists keys a provider does not know, which are most
// often misspellings of ones it does.
type UnknownKeysError struct {
	Unknown []string // sorted
	Known   []string
}

func (e *UnknownKeysError) Error() string {
	return fmt.Sprintf("unknown setting %s (known: %s)", strings.Join(e.Unknown, ", "), strings.Join(e.Known, ", "))
}
