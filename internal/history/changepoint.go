package history

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// ChangePoint is where a series moved to a new level.
type ChangePoint struct {
	// Index is the first point of the new level.
	Index int
	// Before and After are the medians of the segments on each side
	// (between the neighbouring change points), or for a step the two
	// values.
	Before, After float64
	// P is the permutation test's p-value; 0 for a step of exact counts.
	P float64
}

// Change is After relative to Before (+0.1 is 10% more); 0 when Before
// is 0.
func (c ChangePoint) Change() float64 {
	if c.Before == 0 {
		return 0
	}
	return c.After/c.Before - 1
}

// EDivisive finds change points in a noisy series by E-divisive means
// (Matteson and James, "A Nonparametric Approach for Multiple Change
// Point Analysis of Multivariate Data", JASA 2014), as MongoDB's
// performance CI uses it (Daly et al., "Change Point Detection in Software
// Performance Testing", ICPE 2020): bisect at the point that maximises the
// energy statistic between the two sides, keep the cut when a permutation
// test finds it significant, and repeat within the segments. Distances are
// |x-y| (alpha = 1); the end of each segment is fixed (no search over
// kappa, as in MongoDB's implementation).
type EDivisive struct {
	// Permutations is how many permutations each test draws.
	Permutations int
	// PValue is the significance a cut needs: the test's p-value, (1 +
	// permutations whose statistic is at least the observed) /
	// (Permutations + 1), at most PValue.
	PValue float64
	// MinSize is the fewest points a segment holds (at least 2).
	MinSize int
	// Seed seeds the permutations: the same series gives the same change
	// points.
	Seed uint64
}

// DefaultEDivisive is MongoDB's significance (0.05) with 199 permutations
// and segments of at least 3 commits.
var DefaultEDivisive = EDivisive{Permutations: 199, PValue: 0.05, MinSize: 3, Seed: 1}

// Find returns the change points of x in order of index.
func (e EDivisive) Find(x []float64) []ChangePoint {
	minSize := max(e.MinSize, 2)
	rng := rand.New(rand.NewPCG(e.Seed, 0x68697374))
	cuts := []int{0, len(x)} // segment boundaries
	pvals := map[int]float64{}
	scratch := make([]float64, len(x))
	for {
		// The best cut of every segment; the largest statistic wins.
		bestQ, bestAt := math.Inf(-1), -1
		for s := 0; s+1 < len(cuts); s++ {
			if q, at := bestCut(x[cuts[s]:cuts[s+1]], minSize); at >= 0 && q > bestQ {
				bestQ, bestAt = q, cuts[s]+at
			}
		}
		if bestAt < 0 || bestQ <= 0 {
			break
		}
		// Permutation test: shuffle within each segment, take the
		// largest statistic over the segments.
		copy(scratch, x)
		exceed := 0
		for range e.Permutations {
			maxQ := math.Inf(-1)
			for s := 0; s+1 < len(cuts); s++ {
				seg := scratch[cuts[s]:cuts[s+1]]
				rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
				if q, at := bestCut(seg, minSize); at >= 0 {
					maxQ = math.Max(maxQ, q)
				}
			}
			if maxQ >= bestQ {
				exceed++
			}
		}
		p := float64(exceed+1) / float64(e.Permutations+1)
		if p > e.PValue {
			break
		}
		pvals[bestAt] = p
		cuts = append(cuts, bestAt)
		sort.Ints(cuts)
	}
	var out []ChangePoint
	for i := 1; i+1 < len(cuts); i++ {
		at := cuts[i]
		out = append(out, ChangePoint{Index: at, Before: stats.Median(x[cuts[i-1]:at]), After: stats.Median(x[at:cuts[i+1]]), P: pvals[at]})
	}
	return out
}

// bestCut returns the largest energy statistic of splitting x into
// x[:t] and x[t:], each at least minSize long, and its t (-1 when x is too
// short):
//
//	Q(t) = m k / (m + k) * (2/(m k) B - 2/(m (m-1)) WL - 2/(k (k-1)) WR)
//
// with m = t, k = len(x) - t, B the sum of |x_i - x_j| across the cut and
// WL, WR the sums within each side. O(len(x)^2).
func bestCut(x []float64, minSize int) (float64, int) {
	n := len(x)
	if n < 2*minSize {
		return 0, -1
	}
	// left[t]: the sum of distances of pairs within x[:t]; right[t]:
	// within x[t:]; row[i]: x_i's distances to every point.
	left := make([]float64, n+1)
	right := make([]float64, n+1)
	for t := 1; t < n; t++ {
		s := 0.0
		for i := range t {
			s += math.Abs(x[t] - x[i])
		}
		left[t+1] = left[t] + s
	}
	for t := n - 2; t >= 0; t-- {
		s := 0.0
		for j := t + 1; j < n; j++ {
			s += math.Abs(x[t] - x[j])
		}
		right[t] = right[t+1] + s
	}
	total := left[n]
	bestQ, bestT := math.Inf(-1), -1
	for t := minSize; t <= n-minSize; t++ {
		m, k := float64(t), float64(n-t)
		wl, wr := left[t], right[t]
		between := total - wl - wr
		e := 2/(m*k)*between - 2/(m*(m-1))*wl - 2/(k*(k-1))*wr
		if q := m * k / (m + k) * e; q > bestQ {
			bestQ, bestT = q, t
		}
	}
	return bestQ, bestT
}

// Steps returns the change points of a series of exact counts: every point
// that differs from the one before by more than tol of it. NaN marks a
// missing point and is skipped.
func Steps(x []float64, tol func(prev float64) float64) []ChangePoint {
	var out []ChangePoint
	prev := -1
	for i, v := range x {
		if math.IsNaN(v) {
			continue
		}
		if prev >= 0 && math.Abs(v-x[prev]) > tol(x[prev]) {
			out = append(out, ChangePoint{Index: i, Before: x[prev], After: v})
		}
		prev = i
	}
	return out
}
