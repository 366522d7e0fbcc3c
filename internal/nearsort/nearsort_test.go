package nearsort

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestInsertion: finished or followed by a stable sort, the result is a
// stable sort's, for data nearly in order (finished within the budget),
// reversed and random (past it).
func TestInsertion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type elem struct{ key, pos int }
	for _, c := range []struct {
		name     string
		key      func(i, n int) int
		finishes bool
	}{
		{"nearly in order", func(i, n int) int {
			if r.IntN(50) == 0 {
				return i*10 - 15
			}
			return i * 10
		}, true},
		{"reversed", func(i, n int) int { return n - i }, false},
		{"random with ties", func(i, n int) int { return r.IntN(n/4 + 1) }, false},
	} {
		for _, n := range []int{0, 1, 2, 100, 70_000} {
			data := make([]elem, n)
			for i := range data {
				data[i] = elem{c.key(i, n), i}
			}
			byKey := func(a, b elem) int { return cmp.Compare(a.key, b.key) }
			want := slices.Clone(data)
			slices.SortStableFunc(want, byKey)
			less := func(i, j int) bool { return data[i].key < data[j].key }
			done := Insertion(n, less, func(i, j int) { data[i], data[j] = data[j], data[i] })
			if !done {
				sort.SliceStable(data, less)
			}
			if n >= 100 && done != c.finishes {
				t.Errorf("%s, %d elements: finished %v, want %v", c.name, n, done, c.finishes)
			}
			if !slices.Equal(data, want) {
				t.Errorf("%s, %d elements: not a stable sort", c.name, n)
			}
		}
	}
}
