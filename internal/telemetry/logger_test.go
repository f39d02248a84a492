package telemetry_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/runfleet/runfleet/internal/telemetry"
)

func TestLoggerWritesJSONWithBaseAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, slog.LevelInfo, "controller_id", "ctl-1")
	log.Debug("hidden")
	log.Info("hello", "pool", "p")

	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("want exactly one JSON line, got %q: %v", buf.String(), err)
	}
	for k, want := range map[string]string{"msg": "hello", "controller_id": "ctl-1", "pool": "p", "level": "INFO"} {
		if line[k] != want {
			t.Errorf("%s = %v, want %q", k, line[k], want)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"": slog.LevelInfo, "DEBUG": slog.LevelDebug, "warn": slog.LevelWarn, "error": slog.LevelError} {
		got, err := telemetry.ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := telemetry.ParseLevel("loud"); err == nil {
		t.Error("ParseLevel(loud) succeeded")
	}
}
