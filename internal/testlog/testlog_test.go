package testlog

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestBufferCollectsAndFiltersRecords(t *testing.T) {
	var b Buffer
	log := b.Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { log.Info("hello", "n", i, "even", i%2 == 0) })
	}
	wg.Wait()
	log.Debug("hidden")
	if got := len(b.Lines(t, nil)); got != 10 {
		t.Fatalf("records = %d, want 10", got)
	}
	if got := len(b.Lines(t, map[string]any{"even": true})); got != 5 {
		t.Fatalf("even records = %d, want 5", got)
	}
	if tail := b.Tail(2); strings.Count(tail, "\n") != 1 {
		t.Fatalf("tail(2) = %q", tail)
	}
	b.Reset()
	if b.String() != "" {
		t.Fatal("reset kept output")
	}
}
