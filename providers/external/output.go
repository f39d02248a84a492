package external

import (
	"bytes"
	"strings"
)

// Output limits. stdout must hold a whole ListInstances answer, so it is
// generous; stderr and faults only explain a failure, and a fault is
// stored on the instance record, so they stay small.
const (
	maxStdoutBytes = 32 << 20
	maxStderrBytes = 64 << 10
	// maxFaultBytes bounds each stream's share of a fault.
	maxFaultBytes = 4 << 10
)

// headBuffer keeps the first limit bytes written and counts the rest, so a
// runaway provider cannot exhaust memory and an overflow is detectable.
type headBuffer struct {
	limit     int
	buf       bytes.Buffer
	truncated bool
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written: a failing program's
// explanation is usually at the end of what it printed.
type tailBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	// Compact only once twice the limit is held, to keep appends cheap.
	if len(b.buf) > 2*b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
		b.truncated = true
	}
	return len(p), nil
}

func (b *tailBuffer) Bytes() []byte {
	if len(b.buf) > b.limit {
		return b.buf[len(b.buf)-b.limit:]
	}
	return b.buf
}

// faultText joins what a failed provider printed, stdout first, each stream
// trimmed and cut to its last maxFaultBytes.
func faultText(stdout, stderr []byte) string {
	var parts []string
	for _, s := range [][]byte{stdout, stderr} {
		if t := lastBytes(strings.TrimSpace(string(s)), maxFaultBytes); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// lastBytes cuts s to its last n bytes, on a UTF-8 boundary, marking the cut.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !isRuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// firstBytes cuts s to its first n bytes, on a UTF-8 boundary, marking the cut.
func firstBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
