package cacheagent

import (
	"slices"
	"testing"
)

// A block's part numbers: consecutive, one per piece, the next ones in
// arrival order; the same again for a retry of the same size (its objects
// are replaced), new ones for a retry of another size (the old objects,
// named by no block list, are deleted at completion).
func TestPiecesFor(t *testing.T) {
	u := &upload{parts: map[string][]int32{}}
	for _, c := range []struct {
		block string
		size  int64
		want  []int32
	}{
		{"a", 2*pieceBytes + 1, []int32{1, 2, 3}},
		{"b", 0, []int32{4}},
		{"c", pieceBytes, []int32{5}},
		{"a", 2*pieceBytes + 1, []int32{1, 2, 3}},
		{"a", 5, []int32{6}},
		{"b", 1, []int32{4}},
	} {
		if got := u.piecesFor(c.block, c.size); !slices.Equal(got, c.want) {
			t.Errorf("piecesFor(%s, %d) = %v, want %v", c.block, c.size, got, c.want)
		}
	}
	if p, ok := u.staged("a"); !ok || !slices.Equal(p, []int32{6}) {
		t.Errorf("staged(a) = %v %v", p, ok)
	}
	if _, ok := u.staged("never"); ok {
		t.Error("a block never sent is staged")
	}
}
