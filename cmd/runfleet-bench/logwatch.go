package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// createdMsg is the engine's log message once a provider create returned
// and the instance was recorded running (internal/engine/create.go). The
// driver watches for it rather than polling the API, so that waiting costs
// the child nothing; if the message changes, waits fall back to the API
// (see waitRunning) and only get slower.
const createdMsg = "instance created"

// logWatch reads the child's JSON log lines as they are written.
type logWatch struct {
	mu sync.Mutex
	// created counts createdMsg lines per instance: more than one is a
	// second create that succeeded.
	created map[string]int
	// problems counts warning and error lines by message.
	problems map[string]int
	// changed is signalled (never blocking) after each created line.
	changed chan struct{}
}

func newLogWatch() *logWatch {
	return &logWatch{created: map[string]int{}, problems: map[string]int{}, changed: make(chan struct{}, 1)}
}

// logLine is the part of a log line the driver reads.
type logLine struct {
	Level    string `json:"level"`
	Msg      string `json:"msg"`
	Instance string `json:"instance"`
}

// consume copies r to keep line by line and notes what it watches for,
// until r ends.
func (w *logWatch) consume(r io.Reader, keep io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	interesting := [][]byte{[]byte(`"msg":"` + createdMsg + `"`), []byte(`"level":"WARN"`), []byte(`"level":"ERROR"`)}
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = keep.Write(append(line, '\n'))
		if !slices.ContainsFunc(interesting, func(p []byte) bool { return bytes.Contains(line, p) }) {
			continue
		}
		var l logLine
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		w.note(l)
	}
	// A read error means the child is gone; its exit is reported by stop.
	_, _ = io.Copy(keep, r)
}

func (w *logWatch) note(l logLine) {
	w.mu.Lock()
	if l.Msg == createdMsg && l.Instance != "" {
		w.created[l.Instance]++
	}
	if l.Level == "WARN" || l.Level == "ERROR" {
		w.problems[l.Level+": "+l.Msg]++
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// allCreated reports whether every name has had its created line.
func (w *logWatch) allCreated(names []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		if w.created[n] == 0 {
			return false
		}
	}
	return true
}

// createdTwice lists instances with more than one created line.
func (w *logWatch) createdTwice() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, n := range w.created {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", name, n))
		}
	}
	slices.Sort(out)
	return out
}

// problemLines returns the warning and error counts so far.
func (w *logWatch) problemLines() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.problems)
}
