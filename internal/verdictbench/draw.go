package verdictbench

import (
	"math/rand/v2"
	"slices"
)

// OrderedPairs returns every ordered pair (i, j), i ≠ j, of 0..n-1, in
// order: (0,1), (0,2), ..., (1,0), (1,2), ... n(n-1) pairs.
func OrderedPairs(n int) [][2]int {
	var out [][2]int
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// Disjoint draws a runs for one side and b for the other, without
// replacement, from 0..n-1: two disjoint sets of indices, each sorted.
// It panics if a+b > n.
func Disjoint(rng *rand.Rand, n, a, b int) (x, y []int) {
	if a < 0 || b < 0 || a+b > n {
		panic("verdictbench: cannot draw disjoint sets of these sizes")
	}
	perm := rng.Perm(n)
	x = sorted(perm[:a])
	y = sorted(perm[a : a+b])
	return x, y
}

// Pick draws k of 0..n-1 without replacement, sorted. It panics if k > n.
func Pick(rng *rand.Rand, n, k int) []int {
	x, _ := Disjoint(rng, n, k, 0)
	return x
}

// NewRand returns the generator of one table cell: a PCG seeded with the
// benchmark's seed and the cell's own number, so that a cell's draws do
// not depend on which other cells ran before it.
func NewRand(seed, cell uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, cell))
}

func sorted(s []int) []int {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
