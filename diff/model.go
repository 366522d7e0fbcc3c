package diff

import (
	"math"
	"slices"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// The noise model (see the package documentation, "Significance").
//
// A function's effective sample count in run j, k_j (its time over the
// run's sampling period), has mean μ_j = E_j·r, where E_j is the run's
// exposure (its samples, corrected for how the rest of the profile moved,
// in share mode; one over the period in absolute mode) and r the
// function's rate on that side. Counts vary by sampling (Poisson: variance
// μ) and between runs (the JIT, caches, the machine: a factor of squared
// coefficient of variation φ, variance φμ²). On the log scale,
// y_j = ln(k_j/E_j) (half a sample where it was not seen) has variance
// about 1/μ_j + φ.
//
// Several runs a side: φ is learned from all the functions of the
// comparison at once, the way DESeq2 and edgeR learn a dispersion across
// genes, from the residuals of every function with enough samples,
// calibrated so that their median matches the χ² median (a robust centre:
// the few functions that changed do not inflate it). Each function's own
// residual variance, in units of 1/μ+φ, is then moderated toward a prior
// fitted across functions (limma's empirical Bayes, with a trend over how
// many samples a function has when they span enough of it); the
// moderation only ever raises a variance, so a function whose runs spread
// more than the prior says keeps its own, with its own degrees of
// freedom. The moderated t statistic has the residual degrees of freedom
// plus the prior's.
//
// One run a side: there are no residuals. The spread of the functions'
// log ratios between the two profiles gives φ and how heavy the tails of
// the noise are: the ratios are fitted as Student's t with a scale of
// √(sampling + 2φ) per function and ν degrees of freedom, by maximum
// likelihood, never below a floor of φ; each function is then tested
// against that t.

// Tuning of the noise model: the model's assumptions, each with its
// reason; see the package documentation for how they were checked.
const (
	// minNoiseCount is the mean effective samples per run a function needs
	// to take part in estimating the noise: below it sampling noise hides
	// run-to-run noise.
	minNoiseCount = 10
	// floorRuns is the least run-to-run dispersion assumed with several
	// runs a side (a 1% coefficient of variation).
	floorRuns = 1e-4
	// floorPair is the least assumed with one run a side, where the runs'
	// own spread cannot be seen: a 5% coefficient of variation.
	floorPair = 0.0025
	// minRunsFunctions is how many functions several runs a side need to
	// learn φ from their residuals; with fewer, φ is the whole profile's
	// run-to-run dispersion (or the floor, when the profile's time is not
	// compared), and the report says the noise was not learned.
	minRunsFunctions = 5
	// minPairFunctions is how many functions one run a side needs to learn
	// φ from their spread; with fewer, the floor is taken.
	minPairFunctions = 5
	// outlierP is the upper-tail probability below which a function's own
	// residual variance counts as beyond the prior and is left out of its
	// fit.
	outlierP = 0.01
	// trendFunctions and trendSpread: the noise prior follows a trend over
	// a function's samples only with at least this many functions whose
	// mean samples per run span at least this factor.
	trendFunctions = 20
	trendSpread    = 8
	// power is the probability of detection that power advice is given for.
	power = 0.8
)

// fitNoise is stage two. In: the function columns normalise filled, the
// runs and the settings. Out: the column fit of every function on both
// sides, the fitted model (kept to judge call paths alike) and its noise,
// which the report shows (Report.Noise).
func fitNoise(c *comparison) {
	s := c.eng
	// The model is fitted on every function present on both sides; the
	// rest are new, gone or too small to say.
	var both []int
	for i := range c.fns {
		if c.fns[i].inBase && c.fns[i].inHead {
			both = append(both, i)
		}
	}
	fs := make([]*feature, len(both))
	fb := make([]feature, len(both))
	for n, i := range both {
		f := &c.fns[i]
		fb[n] = feature{k: f.k, e: f.e, ev: f.ev}
		fs[n] = &fb[n]
	}
	// Total times nest (a caller's total holds its callees'), so one
	// change moves several of them together; with one run a side the
	// noise is learned from self times, which do not.
	var calib []*feature
	if s.Metric == Total && (len(c.b.runs) == 1 || len(c.h.runs) == 1) {
		self := c.measure(Self)
		c.exposures(self, new([]string))
		for i := range self {
			if m := &self[i]; m.inBase && m.inHead {
				calib = append(calib, &feature{k: m.k, e: m.e, ev: m.ev})
			}
		}
	}
	var whole *feature
	if s.Mode != Share {
		// The whole profile's time per run: its run-to-run spread is a
		// noise every function shares, learned even when no function has
		// the samples to show its own.
		whole = &feature{k: make([]float64, len(c.runs)), e: c.general, ev: make([]float64, len(c.runs))}
		for j, r := range c.runs {
			whole.k[j] = r.cpu / r.period
		}
	}
	fits, nz, mdl := fitModel(fs, c.head, calib, whole)
	for n, i := range both {
		c.fns[i].fit = &fits[n]
	}
	c.model, c.noise = mdl, nz
	c.rep.Noise = noiseReport(nz)
}

// feature is one function's data for the model: per run (base runs first),
// its effective sample count and the run's exposure, plus any known
// variance of ln(exposure) (the rest of the profile, when a function is
// compared with it).
type feature struct {
	k, e, ev []float64
}

// fit is the model's result for one function.
type fit struct {
	lfc       float64 // ln(head rate / base rate)
	se        float64 // standard error of lfc
	df        float64 // degrees of freedom of the t statistic
	pUp, pDwn float64 // one-sided p-values: slower, faster
	// perRun is the variance of one run's log value on each side (base,
	// head), for power advice.
	perRun [2]float64
	rate   [2]float64 // fitted rate per side (weighted geometric mean)
}

// noise describes the fitted noise model.
type noise struct {
	phi      float64 // run-to-run dispersion (squared CV)
	resDF    float64 // residual degrees of freedom (runs − 2)
	priorDF  float64 // prior degrees of freedom (+Inf: all alike)
	used     int     // functions the noise was learned from
	present  int     // functions with samples in every run
	outliers int
	source   string
	whole    float64 // the whole profile's run-to-run dispersion (0: unknown)
}

// wholeDispersion is the run-to-run dispersion of the whole profile's time:
// its residual variance on the log scale within the sides, less sampling's.
func wholeDispersion(f *feature, head []bool) float64 {
	ones := make([]float64, len(head))
	for j := range ones {
		ones[j] = 1
	}
	y, c, _ := logValues(f, head)
	_, _, s2, _ := stats.TwoGroup(y, ones, head)
	return math.Max(s2-mean(c), 0)
}

// logValues returns y_j, the sampling variance c_j of y_j and the group
// means' pooled rates of f.
func logValues(f *feature, head []bool) (y, c []float64, rate [2]float64) {
	var sk, se [2]float64
	for j := range f.k {
		g := grp(head[j])
		sk[g] += f.k[j]
		se[g] += f.e[j]
	}
	for g := range rate {
		if se[g] > 0 {
			rate[g] = sk[g] / se[g]
		}
	}
	y = make([]float64, len(f.k))
	c = make([]float64, len(f.k))
	for j := range f.k {
		y[j] = logRate(f.k[j], f.e[j])
		mu := f.e[j] * rate[grp(head[j])]
		c[j] = 1/math.Max(mu, 0.5) + f.ev[j]
	}
	return y, c, rate
}

func grp(head bool) int {
	if head {
		return 1
	}
	return 0
}

// eligibleFor reports whether f has enough samples in every run to say
// something about run-to-run noise.
func eligibleFor(f *feature) bool {
	var sum float64
	for j, k := range f.k {
		if k <= 0 || f.e[j] <= 0 {
			return false
		}
		sum += k
	}
	return sum/float64(len(f.k)) >= minNoiseCount
}

// fitModel fits every feature. head tells each run's side. calib, when not
// nil, are the features one run a side learns the noise from instead of fs.
// The returned model judges further features (call paths) as it judged fs.
//
// whole, when not nil, is the whole profile's time per run (Absolute and
// PerOp modes): its residual dispersion is a noise every function shares,
// the least φ several runs a side take.
func fitModel(fs []*feature, head []bool, calib []*feature, whole *feature) ([]fit, noise, *model) {
	n := len(fs)
	out := make([]fit, n)
	ys := make([][]float64, n)
	cs := make([][]float64, n)
	elig := make([]bool, n)
	var nb, nh int
	for _, h := range head {
		if h {
			nh++
		} else {
			nb++
		}
	}
	for i, f := range fs {
		ys[i], cs[i], out[i].rate = logValues(f, head)
		elig[i] = eligibleFor(f)
	}
	df := float64(nb + nh - 2)
	if df > 0 {
		return fitRuns(fs, head, ys, cs, elig, df, out, whole)
	}
	if calib == nil {
		return fitPair(ys, cs, elig, out, nil, head)
	}
	cy := make([][]float64, len(calib))
	cc := make([][]float64, len(calib))
	ce := make([]bool, len(calib))
	for i, f := range calib {
		cy[i], cc[i], _ = logValues(f, head)
		ce[i] = eligibleFor(f)
	}
	return fitPair(ys, cs, elig, out, &pairCalib{cy, cc, ce}, head)
}

// model is a fitted noise model: what judged the functions, kept to judge
// call paths the same way.
type model struct {
	head []bool
	pair bool
	// oneRun: one side is a single run (several on the other).
	oneRun bool
	phi    float64
	nu     float64     // pair: the t distribution's degrees of freedom
	df     float64     // runs: residual degrees of freedom
	prior  stats.Prior // runs: the moderation's prior
	used   int         // functions the noise was learned from
}

// judge fits one more feature with the model.
func (m *model) judge(f *feature) fit {
	y, c, rate := logValues(f, m.head)
	if m.pair {
		return pairFit(y, c, rate, m.phi, m.nu)
	}
	r := m.weighted(f, y, c)
	r.out.rate = rate
	out := m.moderate(r, m.prior.ScaleAt(r.cov), m.prior.DF, eligibleFor(f))
	if !eligibleFor(f) {
		m.pooledCheck(f, &out)
	}
	return out
}

// weightedFit is one feature's weighted fit before moderation.
type weightedFit struct {
	out      fit
	unscaled float64 // variance of lfc per unit of residual variance
	s2       float64 // residual variance in units of the model's
	cov      float64 // ln(mean samples per run + 1), the prior's covariate
}

func (m *model) weighted(f *feature, y, c []float64) weightedFit {
	w := make([]float64, len(m.head))
	for j := range w {
		w[j] = 1 / (c[j] + m.phi)
	}
	var r weightedFit
	r.out.lfc, r.unscaled, r.s2, _ = stats.TwoGroup(y, w, m.head)
	var sum float64
	for _, k := range f.k {
		sum += k
	}
	r.cov = math.Log(sum/float64(len(m.head)) + 1)
	r.out.perRun = groupVar(c, m.head, m.phi)
	return r
}

// moderate turns a weighted fit into the moderated test, given the prior's
// scale and degrees of freedom for it.
func (m *model) moderate(r weightedFit, scale, d0 float64, elig bool) fit {
	post, postDF := r.s2, m.df
	switch {
	case math.IsInf(d0, 1):
		post, postDF = scale, math.Inf(1)
	case d0 > 0:
		post, postDF = (m.df*r.s2+d0*scale)/(m.df+d0), m.df+d0
	}
	// Shrinkage only ever raises a function's variance: one whose own runs
	// spread more than the prior's (a JIT that compiles it one way in some
	// runs and another way in others) keeps its own variance, with its own
	// degrees of freedom. Shrinking it toward the calm majority would call
	// an unlucky draw of its modes a change.
	if r.s2 > post {
		post, postDF = r.s2, m.df
	}
	if !elig {
		// The prior was learned on functions with many samples, whose
		// counts can vary less than Poisson's (the profiler's timer is
		// periodic). A function seen in a handful of samples a run varies
		// at least by sampling and the learned dispersion.
		post = math.Max(post, 1)
	}
	f := r.out
	f.se = math.Sqrt(post * r.unscaled)
	// Never more degrees of freedom than all the functions' residuals hold
	// together (limma's cap): a prior fitted on a handful of functions is
	// worth no more than they are.
	f.df = math.Min(postDF, m.df*math.Max(float64(m.used), 1))
	if m.oneRun {
		// One run against several predicts a single new run, not a
		// mean: its tails are as heavy as the runs' own noise, which
		// between processes moves several functions at once (a machine's
		// state, a memory layout), so the functions are no independent
		// witnesses of one another's variance. The prior still sets the
		// variance; the tails keep the runs' own degrees of freedom.
		// Measured on a third-party parser (baselines of 5 processes
		// against one new capture): false alarms 4.3-6.7% of comparisons
		// without this, 0.7-3.0% with it.
		f.df = math.Min(f.df, m.df)
	}
	f.perRun[0] *= post
	f.perRun[1] *= post
	f.pUp, f.pDwn = stats.TailT(f.lfc/f.se, f.df)
	return f
}

// pairCalib are the features one run a side learns its noise from when
// they are not the judged ones.
type pairCalib struct {
	ys, cs [][]float64
	elig   []bool
}

// fitRuns is the model with residual degrees of freedom.
func fitRuns(fs []*feature, head []bool, ys, cs [][]float64, elig []bool, df float64, out []fit, whole *feature) ([]fit, noise, *model) {
	n := len(fs)
	ones := make([]float64, len(head))
	for j := range ones {
		ones[j] = 1
	}
	// Raw residual variances and sampling variances of the eligible
	// functions calibrate φ.
	var r2, pois, mult []float64
	for i := range fs {
		if !elig[i] {
			continue
		}
		_, _, s2, _ := stats.TwoGroup(ys[i], ones, head)
		r2 = append(r2, s2)
		pois = append(pois, mean(cs[i]))
		mult = append(mult, 1)
	}
	nz := noise{resDF: df, used: len(r2), source: noiseRuns}
	for _, f := range fs {
		if slices.IndexFunc(f.k, func(k float64) bool { return k <= 0 }) < 0 {
			nz.present++
		}
	}
	if whole != nil {
		nz.whole = wholeDispersion(whole, head)
	}
	if len(r2) >= minRunsFunctions {
		nz.phi = stats.CalibrateDispersion(r2, pois, mult, df, 0.5, floorRuns)
	} else {
		// Too few functions with the samples to show their run-to-run
		// noise: the median of one or two residuals is no estimate (it
		// moved from 1% to 34% between records of the same code).
		nz.phi, nz.source = floorRuns, noiseFloor
	}
	if nz.whole > nz.phi {
		nz.phi = nz.whole
		if nz.source == noiseFloor {
			nz.source = noiseWhole
		}
	}
	m := &model{head: head, phi: nz.phi, df: df, used: nz.used}
	var sides [2]int
	for _, h := range head {
		sides[grp(h)]++
	}
	m.oneRun = sides[0] == 1 || sides[1] == 1

	// Weighted fits: each run weighs by its precision under the model.
	ws := make([]weightedFit, n)
	s2 := make([]float64, n)
	cov := make([]float64, n)
	for i := range fs {
		ws[i] = m.weighted(fs[i], ys[i], cs[i])
		ws[i].out.rate = out[i].rate
		s2[i], cov[i] = ws[i].s2, ws[i].cov
	}
	// A trend of the noise over abundance is fitted only where the
	// functions span enough of it to show one: fitted on a narrow range it
	// follows the noise of a few estimates and misjudges the others.
	if !trendable(cov, elig) {
		cov = nil
	}
	m.prior = stats.FitPrior(s2, df, cov, elig, outlierP)
	nz.priorDF = m.prior.DF
	for i := range fs {
		if m.prior.Outlier[i] {
			nz.outliers++
			out[i] = m.moderate(ws[i], 0, 0, elig[i]) // its own variance
		} else {
			out[i] = m.moderate(ws[i], m.prior.Scale[i], m.prior.DF, elig[i])
		}
		if !elig[i] {
			m.pooledCheck(fs[i], &out[i])
		}
	}
	return out, nz, m
}

// pooledCheck keeps the test of a function with few samples a run honest.
// Its log values are mostly zeros and ones patched with half a sample,
// whose spread says little: such a function is also tested on its
// counts summed over each side (Poisson, with the learned dispersion
// between runs), and the larger p-value stands.
func (m *model) pooledCheck(f *feature, out *fit) {
	var k, e [2]float64
	var n [2]int
	for j := range f.k {
		g := grp(m.head[j])
		k[g] += f.k[j]
		e[g] += f.e[j]
		n[g]++
	}
	if !(e[0] > 0 && e[1] > 0) {
		return
	}
	lfc := math.Log((k[1]+0.5)/e[1]) - math.Log((k[0]+0.5)/e[0])
	v := 1/(k[0]+0.5) + 1/(k[1]+0.5) + m.phi*(1/float64(n[0])+1/float64(n[1]))
	up, down := stats.TailT(lfc/math.Sqrt(v), math.Inf(1))
	out.pUp, out.pDwn = math.Max(out.pUp, up), math.Max(out.pDwn, down)
}

// trendable reports whether the eligible functions are many enough, and
// their mean samples per run spread over a factor of trendSpread, for a
// trend of the noise over abundance.
func trendable(cov []float64, elig []bool) bool {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for i, c := range cov {
		if elig[i] {
			lo, hi, n = math.Min(lo, c), math.Max(hi, c), n+1
		}
	}
	return n >= trendFunctions && hi-lo >= math.Log(trendSpread)
}

// groupVar is the mean model variance of one run's log value on each side.
func groupVar(c []float64, head []bool, phi float64) [2]float64 {
	var s [2]float64
	var n [2]int
	for j := range c {
		g := grp(head[j])
		s[g] += c[j] + phi
		n[g]++
	}
	for g := range s {
		if n[g] > 0 {
			s[g] /= float64(n[g])
		}
	}
	return s
}

// fitPair is the model with one run a side: φ from the spread of the log
// ratios of the eligible functions.
func fitPair(ys, cs [][]float64, elig []bool, out []fit, other *pairCalib, head []bool) ([]fit, noise, *model) {
	cy, cc, ce := ys, cs, elig
	if other != nil {
		cy, cc, ce = other.ys, other.cs, other.elig
	}
	var idx []int
	d2 := make([]float64, 0, len(cy))
	pois := make([]float64, 0, len(cy))
	for i := range cy {
		if ce[i] {
			idx = append(idx, i)
			d := cy[i][1] - cy[i][0]
			d2 = append(d2, d*d)
			pois = append(pois, cc[i][0]+cc[i][1])
		}
	}
	nz := noise{used: len(idx), source: noisePair, priorDF: math.Inf(1)}
	// The noise: a dispersion and how heavy its tails are (a few functions
	// move far more than the rest between runs), fitted to the eligible
	// functions' log ratios, the tested function's among them: one run a
	// side cannot tell a function's change from its own noise, and leaving
	// it out would make the tails look lighter than they are exactly when
	// it is the noisiest.
	phi, nu := floorPair, math.Inf(1)
	if len(idx) >= minPairFunctions {
		dd := make([]float64, len(d2))
		for p := range d2 {
			dd[p] = math.Sqrt(d2[p])
		}
		phi, nu = stats.FitScaledT(dd, pois, 2, floorPair)
	} else {
		nz.source = noiseFloor
	}
	nz.phi, nz.priorDF = phi, nu
	for i := range ys {
		out[i] = pairFit(ys[i], cs[i], out[i].rate, phi, nu)
	}
	return out, nz, &model{head: head, pair: true, phi: phi, nu: nu, used: nz.used}
}

// pairFit is one run a side's test of one feature.
func pairFit(y, c []float64, rate [2]float64, phi, nu float64) fit {
	f := fit{rate: rate, lfc: y[1] - y[0], df: nu}
	f.perRun = [2]float64{c[0] + phi, c[1] + phi}
	f.se = math.Sqrt(f.perRun[0] + f.perRun[1])
	f.pUp, f.pDwn = stats.TailT(f.lfc/f.se, f.df)
	return f
}

// detectable returns the smallest relative change (0.12 = +12%) that a
// one-sided test at level a detects with probability power given the
// standard error se on the log scale and df degrees of freedom, and the
// runs a side that would detect a change of minRel with the per-run
// variances v (base, head) at the same level (0 when no number of runs
// would: minRel is 0).
func detectable(se, df, a, minRel float64, v [2]float64) (float64, int) {
	if !(se > 0) || !(a > 0 && a < 1) {
		return math.NaN(), 0
	}
	q := stats.QuantileT(1-a, df) + stats.QuantileT(power, df)
	mde := math.Expm1(q * se)
	if !(minRel > 0) {
		return mde, 0
	}
	z := stats.QuantileT(1-a, math.Inf(1)) + stats.QuantileT(power, math.Inf(1))
	l := math.Log1p(minRel)
	runs := math.Ceil(z * z * (v[0] + v[1]) / (l * l))
	return mde, int(math.Min(math.Max(runs, 2), 1e6))
}

// logRate is ln(k/e), with half a sample for a run where the function was
// not seen.
func logRate(k, e float64) float64 {
	return math.Log(math.Max(k, 0.5) / e)
}
