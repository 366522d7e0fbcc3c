package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestTrigamma(t *testing.T) {
	// Closed forms: ψ'(1) = π²/6, ψ'(1/2) = π²/2, ψ'(x+1) = ψ'(x) − 1/x².
	if got := Trigamma(1); !near(got, math.Pi*math.Pi/6, 1e-12) {
		t.Errorf("Trigamma(1) = %v", got)
	}
	if got := Trigamma(0.5); !near(got, math.Pi*math.Pi/2, 1e-12) {
		t.Errorf("Trigamma(0.5) = %v", got)
	}
	if got, want := Trigamma(3.7), Trigamma(2.7)-1/(2.7*2.7); !near(got, want, 1e-12) {
		t.Errorf("recurrence: %v vs %v", got, want)
	}
	for _, y := range []float64{0.05, 0.3, 1, 2.5, 17, 400, 1e5} {
		if got := TrigammaInverse(Trigamma(y)); !near(got, y, 1e-7) {
			t.Errorf("TrigammaInverse(Trigamma(%v)) = %v", y, got)
		}
	}
	if !math.IsNaN(TrigammaInverse(-1)) {
		t.Error("TrigammaInverse of a negative number is not NaN")
	}
}

// scaledF draws n variances from the model FitPrior assumes: σ² with
// s0²/σ² ~ χ²(d0)/d0, then s² = σ²·χ²(df)/df.
func scaledF(r *rand.Rand, n int, s0, d0, df float64) []float64 {
	cd0 := distuv.ChiSquared{K: d0, Src: r}
	cdf := distuv.ChiSquared{K: df, Src: r}
	out := make([]float64, n)
	for i := range out {
		sigma2 := s0
		if !math.IsInf(d0, 1) {
			sigma2 = s0 * d0 / cd0.Rand()
		}
		out[i] = sigma2 * cdf.Rand() / df
	}
	return out
}

func TestFitPriorRecoversScaledF(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ s0, d0, df float64 }{{0.5, 4, 8}, {2, 10, 3}, {1, 20, 8}} {
		s2 := scaledF(r, 8000, c.s0, c.d0, c.df)
		p := FitPrior(s2, c.df, nil, nil, 0)
		if !near(p.DF, c.d0, 0.3) || !near(p.Scale[0], c.s0, 0.06) {
			t.Errorf("s0 %v d0 %v df %v: fitted scale %.3f, df %.2f", c.s0, c.d0, c.df, p.Scale[0], p.DF)
		}
	}
	// Equal true variances: the prior's df is infinite or very large.
	s2 := scaledF(r, 20000, 1, math.Inf(1), 6)
	if p := FitPrior(s2, 6, nil, nil, 0); p.DF < 200 || !near(p.Scale[0], 1, 0.03) {
		t.Errorf("equal variances: scale %.3f, df %.1f", p.Scale[0], p.DF)
	}
}

func TestFitPriorTrend(t *testing.T) {
	// The scale doubles per unit of the covariate.
	r := rand.New(rand.NewPCG(3, 4))
	n := 20000
	cov := make([]float64, n)
	s2 := scaledF(r, n, 1, 8, 6)
	for i := range s2 {
		cov[i] = float64(i%4) - 1.5
		s2[i] *= math.Exp2(cov[i])
	}
	p := FitPrior(s2, 6, cov, nil, 0)
	for _, i := range []int{0, 1, 2, 3} {
		if want := math.Exp2(cov[i]); !near(p.Scale[i], want, 0.08) {
			t.Errorf("cov %v: scale %.3f, want %.3f", cov[i], p.Scale[i], want)
		}
	}
}

func TestFitPriorOutliers(t *testing.T) {
	// 3% of the features are 30 times noisier: they are set aside, keep
	// their own variance, and the rest's prior is as if they were absent.
	r := rand.New(rand.NewPCG(5, 6))
	s2 := scaledF(r, 5000, 1, 10, 8)
	noisy := 0
	for i := 0; i < len(s2); i += 33 {
		s2[i] *= 30
		noisy++
	}
	p := FitPrior(s2, 8, nil, nil, 0.01)
	marked, hit := 0, 0
	for i, o := range p.Outlier {
		if o {
			marked++
			if i%33 == 0 {
				hit++
			}
		}
	}
	if hit < noisy*8/10 || marked > hit+len(s2)/50 {
		t.Errorf("%d of %d noisy features marked, %d marked in all", hit, noisy, marked)
	}
	if !near(p.DF, 10, 0.35) || !near(p.Scale[1], 1, 0.1) {
		t.Errorf("prior after setting outliers aside: scale %.3f, df %.2f", p.Scale[1], p.DF)
	}
	post, pdf := p.Squeeze(s2, 8)
	if post[0] != s2[0] || pdf[0] != 8 {
		t.Errorf("an outlier's posterior is %v (df %v), want its own %v (df 8)", post[0], pdf[0], s2[0])
	}
	if want := (8*s2[1] + p.DF*p.Scale[1]) / (8 + p.DF); !near(post[1], want, 1e-12) || pdf[1] != 8+p.DF {
		t.Errorf("posterior %v (df %v), want %v", post[1], pdf[1], want)
	}
}

func TestFitPriorEdges(t *testing.T) {
	if p := FitPrior(nil, 4, nil, nil, 0.01); !math.IsInf(p.DF, 1) {
		t.Errorf("no features: df %v", p.DF)
	}
	p := FitPrior([]float64{1, 2}, 0, nil, nil, 0.01)
	if !math.IsInf(p.DF, 1) || len(p.Scale) != 2 {
		t.Errorf("no residual df: %+v", p)
	}
	// use excludes a huge value from the fit; it still gets a scale.
	p = FitPrior([]float64{1, 1.1, 0.9, 1e6}, 4, nil, []bool{true, true, true, false}, 0)
	if p.Scale[3] > 2 {
		t.Errorf("excluded feature moved the prior: %v", p.Scale)
	}
}

func TestCalibrateDispersion(t *testing.T) {
	// Residual variances of features with known sampling variances and a
	// true dispersion of 0.04 (20% CV between runs).
	r := rand.New(rand.NewPCG(7, 8))
	const df, phi = 8.0, 0.04
	n := 4000
	resid, pois, mult := make([]float64, n), make([]float64, n), make([]float64, n)
	chi := distuv.ChiSquared{K: df, Src: r}
	for i := range resid {
		pois[i] = 1 / (10 + 1000*r.Float64())
		mult[i] = 1
		resid[i] = (pois[i] + phi) * chi.Rand() / df
	}
	if got := CalibrateDispersion(resid, pois, mult, df, 0.5, 0); !near(got, phi, 0.06) {
		t.Errorf("median calibration: %.4f, want %.4f", got, phi)
	}
	if got := CalibrateDispersion(resid, pois, mult, df, 0.75, 0); !near(got, phi, 0.08) {
		t.Errorf("75%% calibration: %.4f, want %.4f", got, phi)
	}
	// Pure sampling noise: the floor.
	for i := range resid {
		resid[i] = pois[i] * chi.Rand() / df
	}
	if got := CalibrateDispersion(resid, pois, mult, df, 0.5, 0.001); got > 0.0015 {
		t.Errorf("no run-to-run noise: %.5f", got)
	}
}

func TestTwoGroupHandWorked(t *testing.T) {
	// Base 1, 3 (mean 2); head 4, 6, 8 (mean 6); unit weights: difference
	// 4, rss 2 + 8 = 10 over 3 df, unscaled variance 1/2 + 1/3.
	d, u, s2, df := TwoGroup([]float64{1, 3, 4, 6, 8}, []float64{1, 1, 1, 1, 1}, []bool{false, false, true, true, true})
	if d != 4 || !near(u, 5.0/6, 1e-12) || !near(s2, 10.0/3, 1e-12) || df != 3 {
		t.Errorf("got %v %v %v %v", d, u, s2, df)
	}
	// Weights 2 and 1 on the base: mean (2·1+1·4)/3 = 2.
	d, u, _, _ = TwoGroup([]float64{1, 4, 5}, []float64{2, 1, 4}, []bool{false, false, true})
	if !near(d, 3, 1e-12) || !near(u, 1.0/3+1.0/4, 1e-12) {
		t.Errorf("weighted: %v %v", d, u)
	}
}

func TestTails(t *testing.T) {
	// t(8) upper 2.5% point is 2.306004.
	up, down := TailT(2.306004, 8)
	if !near(up, 0.025, 1e-5) || !near(down, 0.975, 1e-5) {
		t.Errorf("t(8): %v %v", up, down)
	}
	if up, _ := TailT(1.959964, math.Inf(1)); !near(up, 0.025, 1e-5) {
		t.Errorf("normal: %v", up)
	}
	if q := QuantileT(0.975, 8); !near(q, 2.306004, 1e-5) {
		t.Errorf("QuantileT: %v", q)
	}
}

func TestBH(t *testing.T) {
	// p sorted: 0.01 0.02 0.03 0.5 → ×4/k: 0.04 0.04 0.04 0.5.
	q := BH([]float64{0.03, 0.5, 0.01, 0.02})
	want := []float64{0.04, 0.5, 0.04, 0.04}
	for i := range q {
		if !near(q[i], want[i], 1e-12) {
			t.Errorf("q = %v, want %v", q, want)
			break
		}
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{4, 1, 3, 2}
	if Median(v) != 2.5 || Quantile(v, 0) != 1 || Quantile(v, 1) != 4 || Quantile(v, 0.25) != 1.75 {
		t.Errorf("quantiles of %v wrong", v)
	}
	if v[0] != 4 {
		t.Error("Quantile sorted its input")
	}
}

func TestWeightedBH(t *testing.T) {
	p := []float64{0.03, 0.5, 0.01, 0.02}
	q := WeightedBH(p, []float64{2, 2, 2, 2})
	for i, want := range BH(p) {
		if !near(q[i], want, 1e-12) {
			t.Fatalf("equal weights: %v, want BH's %v", q, BH(p))
		}
	}
	// Weights 3 and 1 (mean 2 → 1.5 and 0.5): p/w = 0.004, 0.02 → sorted
	// 0.004 (×2/1) = 0.008 and 0.02 (×2/2) = 0.02.
	q = WeightedBH([]float64{0.006, 0.01}, []float64{3, 1})
	if !near(q[0], 0.008, 1e-12) || !near(q[1], 0.02, 1e-12) {
		t.Errorf("weighted: %v, want [0.008 0.02]", q)
	}
	if q := WeightedBH([]float64{0.001, 0.2}, []float64{0, 1}); q[0] != 1 {
		t.Errorf("weight 0: q = %v, want 1", q[0])
	}
}

func TestFitScaledT(t *testing.T) {
	// Differences drawn as t(3) times √(v + 2φ) with φ = 0.01: the fit
	// finds both, within the noise of 4000 draws.
	r := rand.New(rand.NewPCG(9, 10))
	st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 3, Src: r}
	n := 1000
	d, v := make([]float64, n), make([]float64, n)
	for i := range d {
		v[i] = 1 / (20 + 2000*r.Float64())
		d[i] = st.Rand() * math.Sqrt(v[i]+2*0.01)
	}
	phi, nu := FitScaledT(d, v, 2, 1e-4)
	if !near(phi, 0.01, 0.25) || nu < 2 || nu > 6 {
		t.Errorf("fit: phi %.4f (want 0.01), nu %v (want 3)", phi, nu)
	}
	// Normal differences: light tails, nu large.
	for i := range d {
		d[i] = r.NormFloat64() * math.Sqrt(v[i]+2*0.01)
	}
	if phi, nu := FitScaledT(d, v, 2, 1e-4); !near(phi, 0.01, 0.2) || nu < 20 {
		t.Errorf("normal: phi %.4f, nu %v", phi, nu)
	}
	// The floor holds when there is no dispersion at all.
	for i := range d {
		d[i] = r.NormFloat64() * math.Sqrt(v[i])
	}
	if phi, _ := FitScaledT(d, v, 2, 0.0025); phi != 0.0025 {
		t.Errorf("no dispersion: phi %v, want the floor", phi)
	}
}

func TestRankMinP(t *testing.T) {
	// 1/C(n1+n2, n1), by hand: C(10,5) = 252, C(8,3) = 56, C(2,1) = 2.
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{{5, 5, 1.0 / 252}, {3, 5, 1.0 / 56}, {5, 3, 1.0 / 56}, {1, 1, 0.5}} {
		if got := RankMinP(c.n1, c.n2); !near(got, c.want, 1e-12) {
			t.Errorf("RankMinP(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
}

// TestRankWarnings: the fewest runs a side with which 2/C(2n, n) < alpha,
// worked by hand (n=3: 2/20 = 0.1; n=4: 2/70 = 0.029; n=5: 2/252 =
// 0.0079), and one warning per pair of run counts, counted.
func TestRankWarnings(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		want  int
	}{{0.11, 3}, {0.05, 4}, {0.01, 5}} {
		if got := RankRunsNeeded(c.alpha); got != c.want {
			t.Errorf("RankRunsNeeded(%g) = %d, want %d", c.alpha, got, c.want)
		}
	}
	got := RankWarnings([][2]int{{2, 2}, {}, {2, 3}, {2, 2}}, "functions", 0.05)
	want := []string{
		"with 2 and 2 runs the Mann-Whitney test cannot reach p < 0.05 whatever they measure: need >= 4 runs a side (2 functions)",
		"with 2 and 3 runs the Mann-Whitney test cannot reach p < 0.05 whatever they measure: need >= 4 runs a side (1 functions)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("RankWarnings = %q, want %q", got, want)
	}
}
