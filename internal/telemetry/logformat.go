package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// LogFormat is how log lines are written: JSON for machines (the default
// wherever logs are collected), text for a person at a terminal.
type LogFormat string

const (
	LogJSON LogFormat = "json"
	LogText LogFormat = "text"
)

// ParseLogFormat reads a format name: text or json (any case); "" or
// "auto" is the default for w (DefaultLogFormat).
func ParseLogFormat(name string, w io.Writer) (LogFormat, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "auto":
		return DefaultLogFormat(w), nil
	case "json":
		return LogJSON, nil
	case "text":
		return LogText, nil
	default:
		return "", fmt.Errorf("unknown log format %q (want text or json)", name)
	}
}

// DefaultLogFormat is text when w is a terminal and JSON otherwise: a
// person running serve by hand reads it, a service manager or container
// runtime collects it.
func DefaultLogFormat(w io.Writer) LogFormat {
	if f, ok := w.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			return LogText
		}
	}
	return LogJSON
}

// NewLoggerFormat is NewLogger in the given format.
func NewLoggerFormat(w io.Writer, format LogFormat, level slog.Level, attrs ...any) *slog.Logger {
	if format == LogText {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With(attrs...)
	}
	return NewLogger(w, level, attrs...)
}
