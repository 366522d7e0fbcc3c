// Package stats holds the numerics behind hotbudget's verdicts: the
// empirical-Bayes moderation of per-function variances that limma
// (Smyth 2004) and edgeR's quasi-likelihood pipeline (Lund, Nettleton,
// McCarthy, Smyth 2012) use for read counts per gene, adapted to sample
// counts per function, and the calibration of run-to-run noise from the
// bulk of the functions of one comparison.
//
// It knows nothing of profiles: callers hand it numbers per feature and run.
// Distributions and special functions come from gonum.
package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// Trigamma is the second derivative of log Γ at x > 0.
func Trigamma(x float64) float64 { return mathext.Zeta(2, x) }

// tetragamma is the third derivative of log Γ at x > 0.
func tetragamma(x float64) float64 { return -2 * mathext.Zeta(3, x) }

// TrigammaInverse returns the y > 0 with Trigamma(y) = x, for x > 0, by
// limma's Newton iteration.
func TrigammaInverse(x float64) float64 {
	switch {
	case !(x > 0):
		return math.NaN()
	case x > 1e7:
		return 1 / math.Sqrt(x)
	case x < 1e-6:
		return 1 / x
	}
	y := 0.5 + 1/x
	for i := 0; i < 100; i++ {
		tri := Trigamma(y)
		dif := tri * (1 - tri/x) / tetragamma(y)
		y += dif
		if -dif/y < 1e-10 {
			break
		}
	}
	return y
}

// Prior is a scaled-F prior for variances: a feature's true variance σ² is
// drawn so that s0²/σ² ~ χ²(DF)/DF, with s0² = Scale[i] for feature i (a
// trend over a covariate, or one value for all).
type Prior struct {
	Scale []float64
	// DF is the prior's degrees of freedom: how many residual degrees of
	// freedom the prior is worth. +Inf when the features' variances do
	// not vary beyond what their own estimates' noise explains.
	DF float64
	// Outlier marks the features whose own variance is far above the
	// prior (see FitPrior): they keep their own estimate.
	Outlier []bool

	// The fitted scale as a function of the covariate: exp(a + b·c + shift),
	// c held within [lo, hi]; b is 0 without a trend.
	a, b, lo, hi, shift float64
}

// ScaleAt is the prior's scale for a feature that was not among those
// fitted, with covariate cov (ignored without a trend).
func (p Prior) ScaleAt(cov float64) float64 {
	if p.b == 0 {
		return math.Exp(p.a + p.shift)
	}
	return math.Exp(p.a + p.b*math.Min(math.Max(cov, p.lo), p.hi) + p.shift)
}

// FitPrior estimates the prior of the variances s2 (each estimated with df
// residual degrees of freedom) by limma's moments of log s² (fitFDist),
// with a linear trend over cov when cov is given and has at least ten
// values, else one scale for all.
//
// The fit is robust in the way profiles need: features whose variance is
// far above the prior (upper-tail probability below outlierP under the
// fitted scaled F) are set aside and the prior is fitted again without
// them; they are marked Outlier and keep their own variance in Squeeze. A
// function whose time the JIT moves back and forth between runs is such a
// feature: shrinking its variance toward the calm majority's would call its
// noise a change.
//
// use, when not nil, selects the features the prior is fitted on (those
// with counts enough for their variance to say something); the prior's
// Scale is given for every feature.
func FitPrior(s2 []float64, df float64, cov []float64, use []bool, outlierP float64) Prior {
	n := len(s2)
	pr := Prior{Scale: make([]float64, n), Outlier: make([]bool, n), DF: math.Inf(1)}
	in := make([]bool, n)
	for i := range in {
		in[i] = (use == nil || use[i]) && s2[i] >= 0 && !math.IsInf(s2[i], 0) && !math.IsNaN(s2[i])
	}
	if !(df > 0) {
		return pr
	}
	for round := 0; round < 2; round++ {
		scale, d0, tr := fitFDist(s2, df, cov, in)
		pr.Scale, pr.DF = scale, d0
		pr.a, pr.b, pr.lo, pr.hi, pr.shift = tr.a, tr.b, tr.lo, tr.hi, tr.shift
		if round == 1 || !(outlierP > 0) {
			break
		}
		changed := false
		for i := range s2 {
			if !in[i] || pr.Scale[i] <= 0 {
				continue
			}
			if upperF(s2[i]/pr.Scale[i], df, d0) < outlierP {
				in[i], pr.Outlier[i], changed = false, true, true
			}
		}
		if !changed {
			break
		}
	}
	return pr
}

// upperF is P(F > f) for F ~ F(d1, d2), d2 possibly +Inf (then χ²(d1)/d1).
func upperF(f, d1, d2 float64) float64 {
	if math.IsInf(d2, 1) {
		return distuv.ChiSquared{K: d1}.Survival(f * d1)
	}
	return distuv.F{D1: d1, D2: d2}.Survival(f)
}

// trend is a fitted scale: exp(a + b·clamp(c, lo, hi) + shift).
type trend struct{ a, b, lo, hi, shift float64 }

// fitFDist is limma's moment estimator of a scaled F distribution on the
// features marked in, with an optional linear trend of the scale over cov.
func fitFDist(s2 []float64, df float64, cov []float64, in []bool) ([]float64, float64, trend) {
	var xs []float64
	var cs []float64
	for i, ok := range in {
		if ok {
			xs = append(xs, s2[i])
			if cov != nil {
				cs = append(cs, cov[i])
			}
		}
	}
	out := make([]float64, len(s2))
	if len(xs) == 0 {
		return out, math.Inf(1), trend{}
	}
	m := median(xs)
	if m <= 0 {
		m = 1
	}
	e := make([]float64, len(xs))
	for k, x := range xs {
		x = math.Max(x, 1e-5*m)
		e[k] = math.Log(x) - mathext.Digamma(df/2) + math.Log(df/2)
	}
	var a, b, evar float64
	useTrend := cov != nil && len(xs) >= 10 && spread(cs) > 0
	if useTrend {
		a, b = linearFit(cs, e)
		for k := range e {
			r := e[k] - (a + b*cs[k])
			evar += r * r
		}
		evar /= float64(len(e) - 2)
	} else {
		a = mean(e)
		if len(e) > 1 {
			for _, v := range e {
				evar += (v - a) * (v - a)
			}
			evar /= float64(len(e) - 1)
		} else {
			evar = 0
		}
	}
	evar -= Trigamma(df / 2)
	d0 := math.Inf(1)
	shift := 0.0
	if evar > 0 {
		d0 = 2 * TrigammaInverse(evar)
		shift = mathext.Digamma(d0/2) - math.Log(d0/2)
	}
	tr := trend{a: a, shift: shift}
	if useTrend {
		// Outside the fitted range the trend is held flat.
		tr.b, tr.lo, tr.hi = b, minOf(cs), maxOf(cs)
	}
	p := Prior{a: tr.a, b: tr.b, lo: tr.lo, hi: tr.hi, shift: tr.shift}
	for i := range out {
		c := 0.0
		if cov != nil {
			c = cov[i]
		}
		out[i] = p.ScaleAt(c)
	}
	return out, d0, tr
}

// Squeeze returns the posterior variances: (df·s2 + DF·Scale)/(df + DF),
// the prior's scale when DF is infinite, and s2 itself for outliers, with
// the degrees of freedom each posterior is worth.
func (p Prior) Squeeze(s2 []float64, df float64) (post, postDF []float64) {
	post = make([]float64, len(s2))
	postDF = make([]float64, len(s2))
	for i, s := range s2 {
		switch {
		case p.Outlier[i]:
			post[i], postDF[i] = s, df
		case math.IsInf(p.DF, 1):
			post[i], postDF[i] = p.Scale[i], math.Inf(1)
		default:
			post[i] = (df*s + p.DF*p.Scale[i]) / (df + p.DF)
			postDF[i] = df + p.DF
		}
	}
	return post, postDF
}

// CalibrateDispersion estimates the run-to-run dispersion φ (the squared
// coefficient of variation of a function's rate between runs, beyond
// sampling noise) from residuals of many features: resid2[i] is a sum of
// squared residuals of feature i worth df degrees of freedom, divided by
// df, whose expected value is pois[i] + mult[i]·φ (pois: the sampling
// variance, known). It returns the φ ≥ floor at which the q-quantile of
// resid2[i]/(pois[i]+mult[i]·φ) over the features equals that of χ²(df)/df:
// a quantile rather than a mean, so that a few functions that really
// changed do not inflate it. At q = 0.5 this is a robust centre; a larger q
// calibrates on the noisier features.
func CalibrateDispersion(resid2, pois, mult []float64, df, q, floor float64) float64 {
	if len(resid2) == 0 || !(df > 0) {
		return floor
	}
	target := distuv.ChiSquared{K: df}.Quantile(q) / df
	ratios := make([]float64, len(resid2))
	at := func(phi float64) float64 {
		for i := range resid2 {
			ratios[i] = resid2[i] / (pois[i] + mult[i]*phi)
		}
		return quantile(ratios, q)
	}
	lo := math.Max(floor, 0)
	if at(lo) <= target {
		return lo
	}
	hi := math.Max(lo, 1e-4) * 2
	for at(hi) > target {
		hi *= 2
		if hi > 1e6 {
			return hi
		}
	}
	for i := 0; i < 60; i++ {
		mid := (lo + hi) / 2
		if at(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TwoGroup fits one feature's log values y (one per run, head[j] telling
// the group) with precision weights w by weighted least squares on a
// group mean each. It returns the difference head − base, its variance per
// unit of residual variance (1/W_base + 1/W_head), the weighted residual
// variance and its degrees of freedom (runs − 2; 0 when a group has a
// single run, and then s2 is 0).
func TwoGroup(y, w []float64, head []bool) (diff, unscaled, s2, df float64) {
	var sw, swy [2]float64
	var n [2]int
	for j := range y {
		g := 0
		if head[j] {
			g = 1
		}
		sw[g] += w[j]
		swy[g] += w[j] * y[j]
		n[g]++
	}
	if sw[0] <= 0 || sw[1] <= 0 {
		return 0, math.Inf(1), 0, 0
	}
	m := [2]float64{swy[0] / sw[0], swy[1] / sw[1]}
	var rss float64
	for j := range y {
		g := 0
		if head[j] {
			g = 1
		}
		r := y[j] - m[g]
		rss += w[j] * r * r
	}
	df = float64(n[0] + n[1] - 2)
	if df > 0 {
		s2 = rss / df
	}
	return m[1] - m[0], 1/sw[0] + 1/sw[1], s2, df
}

// TailT returns P(T ≥ t) and P(T ≤ t) for T ~ Student's t with df degrees
// of freedom (normal when df is infinite or very large).
func TailT(t, df float64) (up, down float64) {
	if math.IsNaN(t) {
		return 1, 1
	}
	if math.IsInf(df, 1) || df > 1e6 {
		n := distuv.UnitNormal
		return n.Survival(t), n.CDF(t)
	}
	st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return st.Survival(t), st.CDF(t)
}

// QuantileT is the p-quantile of Student's t with df degrees of freedom
// (normal when df is infinite).
func QuantileT(p, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e6 {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// BH returns the Benjamini–Hochberg adjusted p-values of p.
func BH(p []float64) []float64 {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	q := make([]float64, len(p))
	m := float64(len(p))
	run := 1.0
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		run = math.Min(run, p[i]*m/float64(k+1))
		q[i] = math.Min(run, 1)
	}
	return q
}

// WeightedBH returns the weighted Benjamini–Hochberg adjusted p-values of
// p (Genovese, Roeder and Wasserman 2006): weights w, fixed before the
// p-values are seen, are scaled to average 1 and p[i]/w[i] take the place
// of p[i]. A feature with weight 0 gets q = 1. With equal weights it is BH.
func WeightedBH(p, w []float64) []float64 {
	var sum float64
	for _, x := range w {
		sum += x
	}
	q := make([]float64, len(p))
	if !(sum > 0) {
		for i := range q {
			q[i] = 1
		}
		return q
	}
	scaled := make([]float64, len(p))
	for i := range p {
		wi := w[i] * float64(len(w)) / sum
		if wi <= 0 {
			scaled[i] = math.Inf(1)
		} else {
			scaled[i] = p[i] / wi
		}
	}
	q = BH(scaled)
	for i := range q {
		q[i] = math.Min(q[i], 1)
	}
	return q
}

// Median returns the median of v (the mean of the middle two for even
// lengths); 0 for an empty v. v is not modified.
func Median(v []float64) float64 { return median(v) }

func median(v []float64) float64 { return quantile(v, 0.5) }

// Quantile returns the q-quantile of v by linear interpolation between
// order statistics (R's type 7); 0 for an empty v. v is not modified.
func Quantile(v []float64, q float64) float64 { return quantile(v, q) }

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func spread(v []float64) float64 { return maxOf(v) - minOf(v) }

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// linearFit is the least-squares line through (x, y).
func linearFit(x, y []float64) (a, b float64) {
	mx, my := mean(x), mean(y)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return my, 0
	}
	b = sxy / sxx
	return my - b*mx, b
}

// maxFitPoints bounds the differences FitScaledT fits.
const maxFitPoints = 1000

// FitScaledT fits, by maximum likelihood, the distribution of differences
// d[i] as d[i]/sqrt(v[i] + mult·phi) ~ Student's t with nu degrees of
// freedom: a known variance v[i] per feature (sampling), plus a dispersion
// phi ≥ floor shared by all, with tails as heavy as nu says. It is the
// marginal distribution of a difference whose own dispersion is drawn from
// a scaled inverse-χ² prior (the empirical-Bayes prior, seen without
// replicates): the few features whose time moves a lot between runs make
// the tails, and the fit learns how heavy they are from all features at
// once. nu is searched in [1, 200]; 200 stands for normal tails.
func FitScaledT(d, v []float64, mult, floor float64) (phi, nu float64) {
	if len(d) == 0 {
		return floor, 200
	}
	if len(d) > maxFitPoints {
		// A deterministic thinning keeps the fit's cost bounded on
		// profiles of tens of thousands of functions.
		step := float64(len(d)) / maxFitPoints
		dd, vv := make([]float64, 0, maxFitPoints), make([]float64, 0, maxFitPoints)
		for x := 0.0; int(x) < len(d) && len(dd) < maxFitPoints; x += step {
			dd = append(dd, d[int(x)])
			vv = append(vv, v[int(x)])
		}
		d, v = dd, vv
	}
	ll := func(phi, nu float64) float64 {
		st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
		var sum float64
		for i := range d {
			s := math.Sqrt(v[i] + mult*phi)
			sum += st.LogProb(d[i]/s) - math.Log(s)
		}
		return sum
	}
	nus := []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 200}
	lo := math.Max(floor, 1e-6)
	best := math.Inf(-1)
	phi, nu = lo, 200
	// A grid over log phi, then golden-section refinement of phi at the best nu.
	const steps = 40
	for k := 0; k <= steps; k++ {
		p := lo * math.Pow(1e4, float64(k)/steps)
		for _, n := range nus {
			if l := ll(p, n); l > best {
				best, phi, nu = l, p, n
			}
		}
	}
	a, b := math.Max(lo, phi/math.Pow(1e4, 1.0/steps)), phi*math.Pow(1e4, 1.0/steps)
	const g = 0.6180339887498949
	for i := 0; i < 40; i++ {
		c, e := b-g*(b-a), a+g*(b-a)
		if ll(c, nu) > ll(e, nu) {
			b = e
		} else {
			a = c
		}
	}
	if m := (a + b) / 2; ll(m, nu) > best {
		phi = m
	}
	return phi, nu
}

// RankMinP is the Mann–Whitney U test's smallest one-sided p-value with n1
// and n2 runs and no ties, 1/C(n1+n2, n1): the p-value of two sides whose
// runs do not overlap at all.
func RankMinP(n1, n2 int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n1) + lg(n2) - lg(n1+n2))
}

// RankRunsNeeded is the fewest runs a side with which the Mann–Whitney
// test's smallest two-sided p-value, 2/C(2n, n), is below alpha (at most
// 64).
func RankRunsNeeded(alpha float64) int {
	n := 1
	for ; n < 64; n++ {
		if 2*RankMinP(n, n) < alpha {
			break
		}
	}
	return n
}

// RankWarnings says once per pair of run counts in tooFew (one pair per
// row tested with Mann–Whitney, in order; a zero pair is a row the test
// could judge), with how many rows it held for, that the test had too
// few runs to flag anything at alpha: the rows' noun names them
// ("functions").
func RankWarnings(tooFew [][2]int, noun string, alpha float64) []string {
	count := map[[2]int]int{}
	var order [][2]int
	for _, n := range tooFew {
		if n == [2]int{} {
			continue
		}
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		out = append(out, fmt.Sprintf("with %d and %d runs the Mann-Whitney test cannot reach p < %g whatever they measure: need >= %d runs a side (%d %s)",
			n[0], n[1], alpha, RankRunsNeeded(alpha), count[n], noun))
	}
	return out
}
