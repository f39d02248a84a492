package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Stats counts what a run did and which faults it injected, by name
// ("fault.provider.create.fail_after", "webhook.duplicated", ...). Names are
// grouped by their first dot-separated part in the report.
type Stats struct {
	Counts map[string]int64
}

func newStats() *Stats { return &Stats{Counts: map[string]int64{}} }

func (s *Stats) inc(name string) { s.Counts[name]++ }

func (s *Stats) add(name string, n int64) { s.Counts[name] += n }

// Merge adds other's counts to s.
func (s *Stats) Merge(other *Stats) {
	for k, v := range other.Counts {
		s.Counts[k] += v
	}
}

// Get returns one count.
func (s *Stats) Get(name string) int64 { return s.Counts[name] }

// String lists every count, sorted, grouped by prefix.
func (s *Stats) String() string {
	var b strings.Builder
	group := ""
	for _, k := range slices.Sorted(maps.Keys(s.Counts)) {
		g, _, _ := strings.Cut(k, ".")
		if g != group {
			if group != "" {
				b.WriteByte('\n')
			}
			group = g
			b.WriteString(g + ":")
		}
		fmt.Fprintf(&b, " %s=%d", strings.TrimPrefix(k, g+"."), s.Counts[k])
	}
	return b.String()
}
