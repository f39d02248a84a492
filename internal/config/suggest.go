package config

import (
	"sort"
	"strings"
)

// suggestField returns the known field a misspelt key most likely meant,
// or "" when none is close: the same letters in another case or with
// other separators (maxRunners, max-runners), or at most a third of the
// letters wrong (lables, max_runer).
func suggestField(key string, known map[string]bool) string {
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names) // one answer for a tie, whatever the map's order
	squash := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	best, bestDist := "", len(key)/3+1
	for _, name := range names {
		if squash(name) == squash(key) {
			return name
		}
		if d := editDistance(key, name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (YAML keys here are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
