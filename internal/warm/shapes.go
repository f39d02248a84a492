package warm

import (
	"cmp"
	"slices"
)

// Apportion splits total warm machines over the shapes jobs asked for, in
// proportion to asked (jobs per shape key; "" is the pool's own machine,
// no shape labels): each shape gets the whole part of its share, and the
// machines left over go to the largest remainders, ties to the shape asked
// for most, then by key, so the split is the same every pass. With nothing
// asked for, every machine is of the pool's own shape: a pool whose jobs
// ask for no shape keeps warm machines as it always did.
func Apportion(total int, asked map[string]int) map[string]int {
	out := map[string]int{}
	if total <= 0 {
		return out
	}
	sum := 0
	for _, n := range asked {
		sum += max(n, 0)
	}
	if sum == 0 {
		out[""] = total
		return out
	}
	type part struct {
		key    string
		asked  int
		remain int // total·asked mod sum: the fraction left, in sum-ths
	}
	var parts []part
	given := 0
	for key, n := range asked {
		if n <= 0 {
			continue
		}
		whole := total * n / sum
		if whole > 0 {
			out[key] = whole
		}
		given += whole
		parts = append(parts, part{key, n, total * n % sum})
	}
	slices.SortFunc(parts, func(a, b part) int {
		if c := cmp.Compare(b.remain, a.remain); c != 0 {
			return c
		}
		if c := cmp.Compare(b.asked, a.asked); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	for i := 0; given < total; i++ {
		out[parts[i%len(parts)].key]++
		given++
	}
	return out
}
