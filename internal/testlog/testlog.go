// Package testlog captures a component's slog JSON output in tests, from
// any number of goroutines, and reads it back as structured records.
package testlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Buffer collects JSON log lines. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer for slog handlers.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Logger is a JSON logger writing into b at level and above.
func (b *Buffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level}))
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset forgets everything written so far.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Tail is the last n lines, for failure messages.
func (b *Buffer) Tail(n int) string {
	lines := bytes.Split(bytes.TrimRight([]byte(b.String()), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Lines returns the records whose fields include every key=value of match
// (compared as text); a nil match returns them all. A line that is not JSON
// fails the test.
func (b *Buffer) Lines(t testing.TB, match map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split([]byte(b.String()), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if matches(m, match) {
			out = append(out, m)
		}
	}
	return out
}

func matches(m, match map[string]any) bool {
	for k, v := range match {
		if fmt.Sprint(m[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// WithMessage returns the records whose msg contains substr.
func (b *Buffer) WithMessage(t testing.TB, substr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range b.Lines(t, nil) {
		if msg, _ := rec["msg"].(string); strings.Contains(msg, substr) {
			out = append(out, rec)
		}
	}
	return out
}
