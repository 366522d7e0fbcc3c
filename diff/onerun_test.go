package diff

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// features draws n functions' counts over the runs of head: Poisson
// sampling around a rate per function with a 10% run-to-run spread
// (seeded), each run's exposure 1000.
func features(n int, head []bool) []*feature {
	rng := rand.New(rand.NewPCG(7, 11))
	fs := make([]*feature, n)
	for i := range fs {
		rate := 0.02 + 0.2*rng.Float64()
		f := &feature{k: make([]float64, len(head)), e: make([]float64, len(head)), ev: make([]float64, len(head))}
		for j := range head {
			mu := 1000 * rate * math.Exp(0.1*rng.NormFloat64())
			f.k[j] = math.Round(mu + math.Sqrt(mu)*rng.NormFloat64())
			f.e[j] = 1000
		}
		fs[i] = f
	}
	return fs
}

// TestOneRunKeepsTheRunsDegreesOfFreedom: one run against several is
// tested with the several's own residual degrees of freedom, not those
// the prior adds (a single new run has the tails of the runs' noise);
// with several runs a side the prior's degrees of freedom count.
func TestOneRunKeepsTheRunsDegreesOfFreedom(t *testing.T) {
	for _, c := range []struct {
		name     string
		head     []bool
		maxDF    float64
		moreThan float64
	}{
		{"5 against 1", []bool{false, false, false, false, false, true}, 4, 0},
		{"1 against 5", []bool{false, true, true, true, true, true}, 4, 0},
		{"5 against 2", []bool{false, false, false, false, false, true, true}, math.Inf(1), 5},
	} {
		fs := features(30, c.head)
		fits, nz, _ := fitModel(fs, c.head, nil, nil)
		if nz.source != noiseRuns {
			t.Fatalf("%s: noise from %s, want runs", c.name, nz.source)
		}
		most := 0.0
		for i, f := range fits {
			most = math.Max(most, f.df)
			if f.df > c.maxDF {
				t.Errorf("%s: function %d tested with %.1f degrees of freedom, want at most %g", c.name, i, f.df, c.maxDF)
				break
			}
			if up, _ := stats.TailT(f.lfc/f.se, f.df); math.Abs(up-f.pUp) > 1e-12 {
				t.Errorf("%s: function %d p %g, want the t tail %g", c.name, i, f.pUp, up)
			}
		}
		if !(most > c.moreThan) {
			t.Errorf("%s: at most %.1f degrees of freedom, want more than %g (the prior's)", c.name, most, c.moreThan)
		}
	}
}
