// Package telemetry holds runfleet's output formats. Structured logs: JSON
// lines through log/slog, one object per event, so they can be searched by
// field (controller_id, delivery_id, job_id, instance, pool) wherever they
// land, or text for a person at a terminal. Metrics on Lambda: EMF, the
// CloudWatch Embedded Metric Format writer that internal/metrics records
// through.
package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// NewLogger returns a JSON logger writing to w at level and above, with
// attrs (key, value pairs) on every line.
func NewLogger(w io.Writer, level slog.Level, attrs ...any) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With(attrs...)
}

// ParseLevel reads a level name: debug, info, warn or error (any case).
func ParseLevel(name string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", name)
	}
}
