package telemetry

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
)

func TestParseLogFormat(t *testing.T) {
	var buf bytes.Buffer
	for name, want := range map[string]LogFormat{"json": LogJSON, "TEXT": LogText, "": LogJSON, "auto": LogJSON} {
		got, err := ParseLogFormat(name, &buf)
		if err != nil || got != want {
			t.Errorf("ParseLogFormat(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := ParseLogFormat("logfmt", &buf); err == nil || !strings.Contains(err.Error(), "logfmt") {
		t.Errorf("ParseLogFormat(logfmt) = %v, want an error naming it", err)
	}
}

func TestDefaultLogFormatIsJSONUnlessATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := DefaultLogFormat(f); got != LogJSON {
		t.Errorf("a regular file gets %q, want json", got)
	}
	if got := DefaultLogFormat(&bytes.Buffer{}); got != LogJSON {
		t.Errorf("a buffer gets %q, want json", got)
	}
	// A character device is what a terminal is; /dev/null stands in for one.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if got := DefaultLogFormat(null); got != LogText {
		t.Errorf("a character device gets %q, want text", got)
	}
}

func TestNewLoggerFormatWritesEachFormat(t *testing.T) {
	var text, js bytes.Buffer
	NewLoggerFormat(&text, LogText, slog.LevelInfo, "pool", "linux-x64").Info("instance created", "instance", "i-1")
	NewLoggerFormat(&js, LogJSON, slog.LevelInfo, "pool", "linux-x64").Info("instance created", "instance", "i-1")
	if line := text.String(); !strings.Contains(line, `msg="instance created"`) || !strings.Contains(line, "pool=linux-x64") || !strings.Contains(line, "instance=i-1") {
		t.Errorf("text line = %q", line)
	}
	var obj map[string]any
	if err := json.Unmarshal(js.Bytes(), &obj); err != nil || obj["pool"] != "linux-x64" || obj["instance"] != "i-1" {
		t.Errorf("json line = %q (%v)", js.String(), err)
	}
}
