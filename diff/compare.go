package diff

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"golang.org/x/perf/benchmath"
)

// run is one profile reduced to per-key measurements.
type run struct {
	table  *analysis.Table
	funcs  map[string]*runFunc
	unit   float64 // normaliser: table total (Share), 1 (Absolute), anchor total or ops (PerOp)
	weight float64 // samples per unit of the compared metric, for the sampling test
}

type runFunc struct {
	name, file          string
	self, total         time.Duration
	selfSamp, totalSamp int64
	selfShare, totShare float64
}

func (f *runFunc) metric(m Metric) (time.Duration, int64) {
	if m == Total {
		return f.total, f.totalSamp
	}
	return f.self, f.selfSamp
}

// Compare judges head against base. Each side is one or more runs of the
// same program; the profiles are not modified.
func Compare(base, head []*profile.Profile, opts ...Option) (*Report, error) {
	s := DefaultSettings
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&s); err != nil {
			return nil, err
		}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(base) == 0 {
		return nil, errors.New("diff: no base profiles")
	}
	if len(head) == 0 {
		return nil, errors.New("diff: no head profiles")
	}
	b, err := s.side("base", base, s.BaseOps)
	if err != nil {
		return nil, err
	}
	h, err := s.side("head", head, s.HeadOps)
	if err != nil {
		return nil, err
	}
	rep := s.judge(b, h)
	rep.in.base, rep.in.head = base, head
	if err := rep.explain(); err != nil {
		return nil, err
	}
	return rep, nil
}

func (s *Settings) check() error {
	switch s.Metric {
	case Self, Total:
	default:
		return fmt.Errorf("diff: unknown metric %q", s.Metric)
	}
	switch s.Key {
	case KeyName, KeyNameFile, KeyNameFileLine:
	default:
		return fmt.Errorf("diff: unknown key %q", s.Key)
	}
	switch s.Assume {
	case AssumeNothing, AssumeNormal:
	case "":
		s.Assume = AssumeNothing // Settings from before the field existed
	default:
		return fmt.Errorf("diff: unknown assumption %q", s.Assume)
	}
	switch s.Mode {
	case Share, Absolute:
	case PerOp:
		if s.Anchor == "" && !(s.BaseOps > 0 && s.HeadOps > 0) {
			return errors.New("diff: per-op mode needs an anchor function or operation counts for both sides")
		}
	default:
		return fmt.Errorf("diff: unknown mode %q", s.Mode)
	}
	if !(s.Alpha > 0 && s.Alpha < 1) {
		return fmt.Errorf("diff: alpha must be in (0,1), got %v", s.Alpha)
	}
	if s.MinRelative < 0 || s.MinAbsolute < 0 || s.MinShare < 0 {
		return errors.New("diff: negative minimum change")
	}
	return nil
}

// key returns the matching key of a function under s.Key.
func (s *Settings) key(f *analysis.Function) string {
	switch s.Key {
	case KeyNameFile:
		return f.Name + "\x00" + CleanPath(f.File)
	case KeyNameFileLine:
		return f.Name + "\x00" + CleanPath(f.File) + "\x00" + strconv.FormatInt(f.Line, 10)
	}
	return f.Name
}

// CleanPath reduces a source file path to the part that survives a change of
// machine, checkout directory or module version: a URL scheme
// ("file:///...") and "@version" suffixes of path elements are dropped, and
// only the last two elements are kept ("/home/runner/work/app/app/internal/
// parse/lex.go" and "/tmp/app/internal/parse/lex.go" both become
// "parse/lex.go"; ".../pkg/mod/example.com/m@v1.2.0/x/y.go" becomes "x/y.go").
func CleanPath(file string) string {
	if file == "" {
		return ""
	}
	if i := strings.Index(file, "://"); i >= 0 {
		file = file[i+3:]
	}
	if i := strings.IndexAny(file, "?#"); i >= 0 {
		file = file[:i]
	}
	file = strings.ReplaceAll(file, `\`, "/")
	elems := strings.Split(path.Clean(file), "/")
	for i, e := range elems {
		if at := strings.Index(e, "@"); at > 0 {
			elems[i] = e[:at]
		}
	}
	if len(elems) > 2 {
		elems = elems[len(elems)-2:]
	}
	return strings.Join(elems, "/")
}

func (s *Settings) analysisOptions() []analysis.Option {
	var o []analysis.Option
	if s.Focus != nil {
		o = append(o, analysis.Focus(s.Focus))
	}
	if s.Ignore != nil {
		o = append(o, analysis.Ignore(s.Ignore))
	}
	if s.DropSynthetic {
		o = append(o, analysis.DropSynthetic())
	}
	if s.Thread != "" {
		o = append(o, analysis.Thread(s.Thread))
	}
	if s.Process != "" {
		o = append(o, analysis.Process(s.Process))
	}
	return o
}

type side struct {
	name string
	runs []*run
	sum  Side
}

func (s *Settings) side(name string, ps []*profile.Profile, ops float64) (*side, error) {
	sd := &side{name: name}
	var total time.Duration
	exact := true
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("diff: %s profile %d is nil", name, i+1)
		}
		t, err := analysis.Functions(p, s.analysisOptions()...)
		if err != nil {
			return nil, fmt.Errorf("diff: %s profile %d: %w", name, i+1, err)
		}
		r := &run{table: t, funcs: make(map[string]*runFunc, len(t.Functions))}
		for j := range t.Functions {
			f := &t.Functions[j]
			k := s.key(f)
			rf := r.funcs[k]
			if rf == nil {
				rf = &runFunc{name: f.Name, file: f.File}
				r.funcs[k] = rf
			}
			rf.self += f.Self
			rf.total += f.Total
			rf.selfSamp += f.SelfSamples
			rf.totalSamp += f.TotalSamples
			rf.selfShare += f.SelfShare
			rf.totShare += f.TotalShare
		}
		// The normaliser and the samples one unit of metric stands for.
		period := float64(t.Period)
		if period <= 0 && t.TotalSamples > 0 {
			period = float64(t.Total) / float64(t.TotalSamples)
		}
		switch s.Mode {
		case Share:
			r.unit = float64(t.Total)
		case Absolute:
			r.unit = 1
		case PerOp:
			if s.Anchor != "" {
				var at time.Duration
				found := false
				for j := range t.Functions {
					if t.Functions[j].Name == s.Anchor {
						at += t.Functions[j].Total
						found = true
					}
				}
				if !found || at <= 0 {
					return nil, fmt.Errorf("diff: %s profile %d: anchor function %q has no time", name, i+1, s.Anchor)
				}
				r.unit = float64(at)
			} else {
				r.unit = ops
			}
		}
		if r.unit <= 0 {
			return nil, fmt.Errorf("diff: %s profile %d has no time to compare", name, i+1)
		}
		if period > 0 {
			r.weight = r.unit / period // samples per unit of normalised metric
		}
		sd.runs = append(sd.runs, r)
		total += t.Total
		sd.sum.Samples += t.TotalSamples
		exact = exact && t.Exact
		if i == 0 {
			sd.sum.Period = t.Period
		}
	}
	sd.sum.Runs = len(ps)
	sd.sum.Total = total / time.Duration(len(ps))
	sd.sum.Exact = exact
	return sd, nil
}

// judge compares the two sides function by function.
func (s *Settings) judge(b, h *side) *Report {
	rep := &Report{Settings: *s, Base: b.sum, Head: h.sum}
	keys := map[string]bool{}
	for _, sd := range []*side{b, h} {
		for _, r := range sd.runs {
			for k := range r.funcs {
				keys[k] = true
			}
		}
	}
	multi := len(b.runs) >= 2 && len(h.runs) >= 2
	exact := b.sum.Exact && h.sum.Exact
	switch {
	case multi:
	case exact:
	default:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"%d base and %d head run(s): only sampling noise is modelled; run-to-run noise (JIT, caches, a busy machine) is not: compare several runs a side",
			len(b.runs), len(h.runs)))
	}
	if b.sum.Period > 0 && h.sum.Period > 0 && b.sum.Period != h.sum.Period {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"base sampled every %v, head every %v: compared as times, not sample counts", b.sum.Period, h.sum.Period))
	}
	if bt, ht := b.runs[0].table.SampleType, h.runs[0].table.SampleType; bt != ht {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("base measures %s, head %s", bt, ht))
	}

	normFor := unitNorm(b, h)
	if s.Mode == Share {
		normFor = s.shareScale(keys, b, h)
		if n := normFor(""); !n.rest && (n.scale < 0.5 || n.scale > 2) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"the shares of most functions moved by a factor of %.3g: the comparison assumes most functions did not change; are both sides the same program and build (one under -race, say)?", n.scale))
		}
	}
	rep.in = &inputs{b: b, h: h, normFor: normFor, multi: multi, exact: exact}
	for k := range keys {
		row := s.row(k, b, h, multi, exact, normFor(k))
		row.key = k
		if s.Only != nil && !s.Only.MatchString(row.Name) {
			continue
		}
		rep.Rows = append(rep.Rows, row)
	}
	// Benjamini–Hochberg over every function present on both sides that is
	// large enough on one of them for its change to reach the absolute
	// minimum effect; slower and faster ones apart: a gate asks "did
	// anything get slower?", and the improvements a regression causes in
	// other shares must not dilute it. The family is chosen by size, not by
	// the observed change, so that picking the functions that moved most
	// does not shrink it (which would let noise through); the minimum
	// effect is applied after the adjustment.
	var up, down, tested []int
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if row.Verdict != "" {
			continue
		}
		if !s.sizeable(math.Max(row.Base.Metric, row.Head.Metric)) {
			row.Verdict, row.Q = Unchanged, 1
			continue
		}
		tested = append(tested, i)
		if row.Delta > 0 {
			up = append(up, i)
		} else {
			down = append(down, i)
		}
	}
	for _, group := range [][]int{up, down} {
		benjaminiHochberg(rep.Rows, group)
	}
	if multi && s.Assume == AssumeNothing && !exact {
		if w := rankLimit(len(b.runs), len(h.runs), len(up), s.Alpha); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	for _, i := range tested {
		row := &rep.Rows[i]
		switch {
		case !s.bigEnough(row, b, h):
			// Below the minimum effect a change is no discovery,
			// however certain: Q says so.
			row.Verdict, row.Q = Unchanged, 1
		case row.Q >= s.Alpha || row.poolP >= s.Alpha:
			row.Verdict = Unchanged
		case row.Delta > 0:
			row.Verdict = Regressed
		default:
			row.Verdict = Improved
		}
	}
	sortRows(rep.Rows)
	rep.Warnings = append(rep.Warnings, testWarnings(rep.Rows, "functions")...)
	return rep
}

// compareRuns tests several runs a side under s.Assume and names the test.
func (s *Settings) compareRuns(base, head []float64) (string, benchmath.Comparison) {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = s.Alpha
	b, h := benchmath.NewSample(base, &th), benchmath.NewSample(head, &th)
	if s.Assume == AssumeNormal {
		return "welch-t", benchmath.AssumeNormal.Compare(b, h)
	}
	return "mann-whitney", benchmath.AssumeNothing.Compare(b, h)
}

// rankLimit warns when the Mann–Whitney test cannot flag a function that
// got slower on its own: its smallest two-sided p-value with n1 and n2
// runs, 2/C(n1+n2, n1), times the m functions tested for slowing down (the
// Benjamini–Hochberg adjustment of the smallest p) is not below alpha.
func rankLimit(n1, n2, m int, alpha float64) string {
	if m == 0 {
		return ""
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	minP := 2 * math.Exp(lg(n1)+lg(n2)-lg(n1+n2))
	if minP >= alpha || minP*float64(m) < alpha {
		return "" // too few runs for any test: benchmath says so itself
	}
	return fmt.Sprintf("with %d and %d runs the Mann-Whitney test's smallest p-value is %.2g, and %d functions are tested for slowing down: a regression of one function alone cannot be flagged at false-discovery rate %g; take more runs, or assume normal runs (Welch's t-test: WithAssumption(AssumeNormal), --assume normal)",
		n1, n2, minP, m, alpha)
}

// testWarnings lifts the Mann–Whitney test's warnings about too few runs
// (benchmath's "need >= 4 samples to detect a difference at alpha level
// 0.05") from the rows to the report, once each with how many rows gave
// it, so that a user who reads only the summary sees them.
func testWarnings(rows []Row, noun string) []string {
	count := map[string]int{}
	var order []string
	for _, row := range rows {
		if row.Test != "mann-whitney" {
			continue
		}
		for _, w := range row.Warnings {
			if !strings.HasPrefix(w, "need >=") {
				continue // e.g. "all samples are equal": the row's own
			}
			if count[w] == 0 {
				order = append(order, w)
			}
			count[w]++
		}
	}
	out := make([]string, 0, len(order))
	for _, w := range order {
		out = append(out, fmt.Sprintf("%s (%d %s)", w, count[w], noun))
	}
	return out
}

// benjaminiHochberg sets Row.Q of rows[idx...] to their adjusted p-values.
func benjaminiHochberg(rows []Row, idx []int) {
	sort.Slice(idx, func(x, y int) bool {
		px, py := rows[idx[x]].P, rows[idx[y]].P
		if px != py {
			return px < py
		}
		return rows[idx[x]].Name < rows[idx[y]].Name
	})
	m := float64(len(idx))
	q := 1.0
	for j := len(idx) - 1; j >= 0; j-- {
		row := &rows[idx[j]]
		q = math.Min(q, row.P*m/float64(j+1))
		row.Q = math.Min(q, 1)
	}
}

// verdictOrder puts what needs attention first.
var verdictOrder = map[Verdict]int{Regressed: 0, Improved: 1, New: 2, Gone: 3, Unchanged: 4}

func sortRows(rows []Row) {
	// Sorted as indices, then moved once: rows are large, and a stable
	// sort moves its elements O(n log n) times.
	less := func(a, b *Row) bool {
		if verdictOrder[a.Verdict] != verdictOrder[b.Verdict] {
			return verdictOrder[a.Verdict] < verdictOrder[b.Verdict]
		}
		da, db := math.Abs(a.Delta), math.Abs(b.Delta)
		if a.Verdict == Unchanged {
			da, db = math.Max(a.Base.Metric, a.Head.Metric), math.Max(b.Base.Metric, b.Head.Metric)
		}
		if da != db {
			return da > db
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.File < b.File
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return less(&rows[idx[i]], &rows[idx[j]]) })
	sorted := make([]Row, len(rows))
	for k, i := range idx {
		sorted[k] = rows[i]
	}
	copy(rows, sorted)
}

// row measures one function on both sides and, when it can be decided
// without a test, gives its verdict; candidates keep an empty Verdict.
//
// n says how the rest of the profile moved (see norm).
func (s *Settings) row(k string, b, h *side, multi, exact bool, n norm) Row {
	scale := n.scale
	row := Row{P: 1, Q: 1, Test: "none", Scale: scale}
	bv, bvals, bk, bw := s.value(k, b, &row)
	hv, hvals, hk, hw := s.value(k, h, &row)
	row.Base, row.Head = bv, hv
	row.Delta = hv.Metric - scale*bv.Metric
	inBase, inHead := bk >= 0, hk >= 0
	switch {
	case !inBase:
		// New only when it matters: a function that appears with a
		// sample or two is noise, not news.
		row.Verdict = Unchanged
		if s.sizeable(hv.Metric) {
			row.Verdict = New
		}
		return row
	case !inHead:
		row.Verdict = Unchanged
		if s.sizeable(bv.Metric) {
			row.Verdict = Gone
		}
		return row
	}
	testScale := scale
	if n.rest {
		testScale = 1
		row.Relative = s.relative(bv.Metric, hv.Metric, scale)
	} else {
		for i := range bvals {
			bvals[i] /= n.base[i]
		}
		for i := range hvals {
			hvals[i] /= n.head[i]
		}
		row.Relative = s.relative(median(bvals), median(hvals), 1)
	}

	// Significance, whether or not the change is large enough to count:
	// the p-value is informative either way.
	switch {
	case multi:
		var c benchmath.Comparison
		row.Test, c = s.compareRuns(bvals, hvals)
		row.P = c.P
		for _, w := range c.Warnings {
			row.Warnings = append(row.Warnings, w.Error())
		}
		if !exact {
			// The change must also stand out from the sampling noise of
			// the samples pooled over the runs: runs far apart by chance
			// are common for a function seen in a handful of samples
			// per run. Checked with the verdict, after the FDR.
			row.poolP = s.sampling(bk, hk, bw, hw, testScale, n)
		}
	case exact:
		row.Test = "exact"
		row.P = 1
		if row.Delta != 0 {
			row.P = 0
		}
	default:
		row.Test = "sampling"
		row.P = s.sampling(bk, hk, bw, hw, testScale, n)
		if bk+hk < 10 {
			row.Warnings = append(row.Warnings, fmt.Sprintf("only %d samples on both sides: too few to see a change", bk+hk))
		}
	}
	row.Q = row.P
	return row
}

// value gathers one side's measurement of key k: the Value, the per-run
// normalised metric, the samples behind it (-1 when absent from every run)
// and the sampling weight (samples per unit of metric, summed over runs).
func (s *Settings) value(k string, sd *side, row *Row) (Value, []float64, int64, float64) {
	var v Value
	vals := make([]float64, len(sd.runs))
	var samples int64 = -1
	var weight float64
	var self, total time.Duration
	for i, r := range sd.runs {
		weight += r.weight
		f := r.funcs[k]
		if f == nil {
			continue
		}
		if row.Name == "" {
			row.Name, row.File = f.name, f.file
		}
		if samples < 0 {
			samples = 0
		}
		self += f.self
		total += f.total
		v.SelfShare += f.selfShare
		v.TotalShare += f.totShare
		t, n := f.metric(s.Metric)
		samples += n
		vals[i] = float64(t) / sd.runs[i].unit
	}
	n := time.Duration(len(sd.runs))
	v.Self, v.Total = self/n, total/n
	v.SelfShare /= float64(len(sd.runs))
	v.TotalShare /= float64(len(sd.runs))
	if samples > 0 {
		v.Samples = samples
	}
	v.Metric = median(vals)
	return v, vals, samples, weight
}

// median is benchmath's non-parametric centre.
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	return benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), vals...), &benchmath.DefaultThresholds), 0.95).Center
}

// relative is the change head/(scale*base) - 1.
func (s *Settings) relative(b, h, scale float64) float64 {
	if b <= 0 || scale <= 0 {
		return 0
	}
	return h/(scale*b) - 1
}

// scaleShares are the shares of either profile a function must hold to take
// part in estimating how the rest of the profile moved: the larger first,
// whose ratios sampling noise moves least, the smaller when fewer than
// three functions are that large.
var scaleShares = []float64{0.05, 0.01}

// norm is how one function's per-run values are normalised before the two
// sides are compared: each run's value is divided by that run's factor.
type norm struct {
	base, head []float64 // per-run divisors, one per run of each side
	// scale is how much the rest of the profile moved between the sides:
	// median head factor / median base factor.
	scale float64
	// rest says the scale was measured as the rest of this very function's
	// profile: comparing the scaled share is then the same hypothesis as
	// comparing the plain shares, and the tests are run on those.
	rest bool
	// yBase and yHead are the yardstick's samples on each side (Share mode,
	// not rest): the sampling test compares the function's samples with
	// them, so that the yardstick's own sampling noise counts too.
	yBase, yHead int64
}

// unitNorm leaves values as they are (Absolute and PerOp modes).
func unitNorm(b, h *side) func(string) norm {
	n := norm{base: ones(len(b.runs)), head: ones(len(h.runs)), scale: 1}
	return func(string) norm { return n }
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// shareScale returns, for each function, how its shares are normalised for
// the movement of the rest of the profile. When any function changes, every
// other share moves the opposite way, and a naive share comparison would
// call them all changed.
//
// The estimate assumes that most functions did not change. The reference
// functions are those holding at least 5% of either side (1% when fewer
// than three do). Each one's pooled ratio is its median share on the head
// side over its median share on the base side, and the median of those
// ratios is how the typical function moved. The majority of the reference
// functions whose pooled ratios are closest to that typical movement are
// the yardstick, and a function f is measured against the yardstick
// without f, so that neither f's own change nor another changed function
// pulls it. The yardstick is taken in every run: its share in the run over
// its share in all runs (medians, both sides pooled), and f's share in
// each run is divided by that factor before the sides are compared. Taking
// it per run puts the yardstick's own noise into the values the test of
// several runs sees, instead of applying one estimated factor to every run
// as if it were exact; summing the yardstick's shares rather than taking
// their median keeps a run's factor free of the bias a median of noisy
// values has. The sampling test, likewise, counts the yardstick's samples
// (see sampling).
//
// With fewer than three reference functions the scale is, for each
// function, the ratio of the rest of its profile, (1 - head share) /
// (1 - base share): the function is compared with everything else.
func (s *Settings) shareScale(keys map[string]bool, b, h *side) func(string) norm {
	type pt struct {
		base, head float64
		vals       []float64 // per-run shares, base runs then head runs
		bk, hk     int64     // samples on each side
	}
	pts := map[string]pt{}
	var scratch Row
	for k := range keys {
		bv, bvals, bk, _ := s.value(k, b, &scratch)
		hv, hvals, hk, _ := s.value(k, h, &scratch)
		if bk < 0 || hk < 0 || bv.Metric <= 0 || hv.Metric <= 0 {
			continue
		}
		pts[k] = pt{bv.Metric, hv.Metric, append(bvals, hvals...), bk, hk}
	}
	nb, nh := len(b.runs), len(h.runs)
	for _, min := range scaleShares {
		var refs []string
		for k, p := range pts {
			if math.Max(p.base, p.head) >= min {
				refs = append(refs, k)
			}
		}
		if len(refs) < 3 {
			continue
		}
		sort.Strings(refs) // deterministic order among equal distances
		index := map[string]int{}
		ratio := make([]float64, len(refs))  // pooled head/base
		pooled := make([]float64, len(refs)) // median share over all runs
		for r, k := range refs {
			index[k] = r
			ratio[r] = pts[k].head / pts[k].base
			pooled[r] = median(pts[k].vals)
		}
		// The majority of the reference functions that moved most like the
		// typical one.
		typical := median(ratio)
		dist := func(r int) float64 { return math.Abs(math.Log(ratio[r] / typical)) }
		majority := make([]int, len(refs))
		for r := range majority {
			majority[r] = r
		}
		sort.SliceStable(majority, func(x, y int) bool { return dist(majority[x]) < dist(majority[y]) })
		majority = majority[:len(refs)/2+1]
		yardstick := func(skip int) norm {
			var others []int
			for _, r := range majority {
				if r != skip {
					others = append(others, r)
				}
			}
			var ref float64
			var yb, yh int64
			for _, r := range others {
				ref += pooled[r]
				yb += pts[refs[r]].bk
				yh += pts[refs[r]].hk
			}
			f := make([]float64, nb+nh)
			for j := range f {
				var sum float64
				for _, r := range others {
					sum += pts[refs[r]].vals[j]
				}
				f[j] = sum / ref
			}
			n := norm{base: f[:nb], head: f[nb:], yBase: yb, yHead: yh}
			// A run without the yardstick's functions has no factor of its
			// own: it takes its side's.
			for _, side := range [][]float64{n.base, n.head} {
				m := positiveMedian(side)
				for j := range side {
					if !(side[j] > 0) {
						side[j] = m
					}
				}
			}
			n.scale = median(n.head) / median(n.base)
			return n
		}
		all := yardstick(-1)
		own := make([]norm, len(refs))
		for r := range refs {
			own[r] = yardstick(r)
		}
		return func(k string) norm {
			if r, ok := index[k]; ok {
				return own[r]
			}
			return all
		}
	}
	return func(k string) norm {
		b, h := 0.0, 0.0
		if p, ok := pts[k]; ok {
			b, h = p.base, p.head
		}
		n := norm{base: ones(nb), head: ones(nh), scale: 1, rest: true}
		if b <= 0.9 && h <= 0.9 { // else nearly everything: there is no rest to compare with
			n.scale = (1 - h) / (1 - b)
		}
		return n
	}
}

// positiveMedian is the median of the positive values of v, 1 when there
// are none.
func positiveMedian(v []float64) float64 {
	var pos []float64
	for _, x := range v {
		if x > 0 {
			pos = append(pos, x)
		}
	}
	if len(pos) == 0 {
		return 1
	}
	return median(pos)
}

// sizeable reports whether a normalised metric value reaches the minimum
// absolute change, so that a function appearing or vanishing at that size
// is worth a verdict of its own.
func (s *Settings) sizeable(v float64) bool {
	switch {
	case s.Mode == Share, s.Mode == PerOp && s.Anchor != "":
		return v >= s.MinShare
	case s.Mode == PerOp:
		return v*math.Max(s.BaseOps, s.HeadOps) >= float64(s.MinAbsolute)
	}
	return v >= float64(s.MinAbsolute)
}

// bigEnough applies the minimum effect: both the relative and the absolute
// change must reach their minimum.
func (s *Settings) bigEnough(row *Row, b, h *side) bool {
	if math.Abs(row.Relative) < s.MinRelative {
		return false
	}
	d := math.Abs(row.Delta)
	switch {
	case s.Mode == Share, s.Mode == PerOp && s.Anchor != "":
		return d >= s.MinShare
	case s.Mode == PerOp:
		// Per-operation times are small: the change summed over the
		// operations of a run must reach MinAbsolute.
		return d*math.Max(s.BaseOps, s.HeadOps) >= float64(s.MinAbsolute)
	}
	return d >= float64(s.MinAbsolute)
}

// sampling is the sampling-noise test of one function with k1 and k2
// samples. Measured against a yardstick, it asks whether the function's
// share of the samples of the function and the yardstick together changed:
// both counts are noisy, and a test that took the yardstick as exact would
// call about one in ten comparisons of two profiles of the same program
// regressed. Otherwise it is samplingP on shares or times.
func (s *Settings) sampling(k1, k2 int64, w1, w2, scale float64, n norm) float64 {
	if s.Mode == Share && !n.rest && n.yBase > 0 && n.yHead > 0 {
		return samplingP(k1, k2, float64(k1+n.yBase), float64(k2+n.yHead), 1, true)
	}
	return samplingP(k1, k2, w1, w2, scale, s.Mode == Share || (s.Mode == PerOp && s.Anchor != ""))
}

// samplingP is the two-sided p-value of the hypothesis that the function's
// rate is the same on both sides, given k1 and k2 samples and weights w1, w2
// (samples one unit of the compared metric stands for). Sample counts are
// Poisson; conditional on k1+k2, k2 is binomial with p = w2/(w1+w2)
// (normal approximation with continuity correction above 50 samples, exact
// below). proportions selects the two-proportion test, for shares of a
// total where the count is binomial in the total samples.
func samplingP(k1, k2 int64, w1, w2, scale float64, proportions bool) float64 {
	if w1 <= 0 || w2 <= 0 {
		return 1
	}
	if proportions {
		// Shares: k/n with n = w (total samples per unit of share); the
		// hypothesis is p2 = scale*p1. Unpooled (Wald) standard error, with
		// a floor of one sample's worth of variance on each side so that a
		// zero count does not make any difference look certain.
		n1, n2 := w1, w2
		p1, p2 := float64(k1)/n1, float64(k2)/n2
		v1 := math.Max(p1*(1-p1), 1/n1) / n1
		v2 := math.Max(p2*(1-p2), 1/n2) / n2
		se := math.Sqrt(v2 + scale*scale*v1)
		cc := 0.5 * (1/n1 + 1/n2)
		z := math.Max(math.Abs(p2-scale*p1)-cc, 0) / se
		return math.Erfc(z / math.Sqrt2)
	}
	n := k1 + k2
	if n == 0 {
		return 1
	}
	pi := w2 / (w1 + w2)
	if n <= 50 {
		return binomTwoSided(k2, n, pi)
	}
	mean := float64(n) * pi
	sd := math.Sqrt(float64(n) * pi * (1 - pi))
	z := math.Max(math.Abs(float64(k2)-mean)-0.5, 0) / sd
	return math.Erfc(z / math.Sqrt2)
}

// binomTwoSided is the exact two-sided binomial test: the probability of an
// outcome no more likely than k under Binomial(n, p).
func binomTwoSided(k, n int64, p float64) float64 {
	pmf := func(i int64) float64 {
		lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
		return math.Exp(lg(float64(n+1)) - lg(float64(i+1)) - lg(float64(n-i+1)) +
			float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	pk := pmf(k) * (1 + 1e-7)
	var sum float64
	for i := int64(0); i <= n; i++ {
		if q := pmf(i); q <= pk {
			sum += q
		}
	}
	return math.Min(sum, 1)
}
