package engine

import (
	"sort"

	"github.com/runfleet/runfleet/internal/runner"
)

// LiveCount is how many live instances one pool has in one status.
type LiveCount struct {
	Pool   string        `json:"pool"`
	Status runner.Status `json:"status"`
	Count  int           `json:"count"`
}

// CountLive counts live instances by pool and status, sorted by pool then
// status, for metrics.
func CountLive(live []*runner.Instance) []LiveCount {
	counts := map[LiveCount]int{}
	for _, inst := range live {
		counts[LiveCount{Pool: inst.Pool, Status: inst.Status}]++
	}
	out := make([]LiveCount, 0, len(counts))
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Status < out[j].Status
	})
	return out
}
