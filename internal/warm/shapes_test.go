package warm

import (
	"maps"
	"testing"
)

func TestApportion(t *testing.T) {
	for _, c := range []struct {
		name  string
		total int
		asked map[string]int
		want  map[string]int
	}{
		{"nothing to keep", 0, map[string]int{"cpu=8": 3}, map[string]int{}},
		{"no shape asked: the pool's own", 4, nil, map[string]int{"": 4}},
		{"one shape takes all", 3, map[string]int{"cpu=8": 5}, map[string]int{"cpu=8": 3}},
		{"in proportion", 6, map[string]int{"": 10, "cpu=8": 20}, map[string]int{"": 2, "cpu=8": 4}},
		{"largest remainder", 4, map[string]int{"": 1, "cpu=8": 1, "cpu=16": 1}, map[string]int{"": 2, "cpu=16": 1, "cpu=8": 1}},
		{"a rare shape below one machine gets none", 3, map[string]int{"": 30, "cpu=64": 1}, map[string]int{"": 3}},
		{"ties go to the shape asked most", 1, map[string]int{"a": 2, "b": 2, "c": 1}, map[string]int{"a": 1}},
		{"negative counts are nothing", 2, map[string]int{"a": -3}, map[string]int{"": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Apportion(c.total, c.asked)
			if !maps.Equal(got, c.want) {
				t.Fatalf("Apportion(%d, %v) = %v, want %v", c.total, c.asked, got, c.want)
			}
			sum := 0
			for _, n := range got {
				sum += n
			}
			if sum != max(c.total, 0) {
				t.Fatalf("Apportion(%d, %v) keeps %d machines", c.total, c.asked, sum)
			}
		})
	}
}
