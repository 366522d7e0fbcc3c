// Package bench compares two `go test -bench` outputs (the benchfmt
// format, several -count runs per benchmark) as benchstat does and judges
// every benchmark and unit: regressed, improved, unchanged, new or gone,
// with the false-discovery rate held across them.
//
// It is a package of its own, beside diff rather than inside it, because
// it shares neither diff's input nor its engine. diff judges the functions
// of profiles: analysis's tables, a noise model learned across the
// functions, normalisation modes, sample selections, matching keys,
// renames and gates. bench judges benchmark results read from text, each
// on its own runs, and none of those options means anything to it. What
// the two share is vocabulary (diff.Verdict, diff.Assumption, the words of Row.Test)
// and the tolerance of exact allocation counts (diff.DefaultAllocTolerance),
// so bench sits one layer above diff: internal <- loaders <- analysis <-
// limits <- diff <- bench <- perfassert, budget <- cmd. It is a top-level
// package rather than diff/bench because its users call it beside diff,
// not through it, as benchstat sits beside pprof. Its Option is its own
// type, so an option that bench could not honour cannot be passed to
// Compare: it does not compile.
//
// perfassert.NoBenchRegression asserts with it in a test, and
// `hotbudget bench OLD NEW` and `hotbudget record` run it on the command
// line.
package bench

import (
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/stats"
	"golang.org/x/perf/benchmath"
)

// schemaVersion names the JSON schema of Report.Write(w, "json").
const schemaVersion = "hotbudget.bench/v2"

// Compare compares `go test -bench` outputs (the benchfmt format; several
// -count runs per benchmark): for each benchmark and unit, a test over the
// runs (Settings.Assume: Mann–Whitney U as benchstat, with benchmath's
// warnings when there are too few runs, or Welch's t-test),
// Benjamini–Hochberg across all of them, and the minimum relative change
// (Settings.MinRelative). B/op and allocs/op are counts, judged exactly
// when each side's runs agree.
//
// Benchmarks are told apart as benchstat tells them apart by default
// (-table .config -row .fullname): by their full name (Parse-2, with
// sub-benchmark and GOMAXPROCS suffix) and by the file-level configuration
// printed before them (pkg, goos, goarch, cpu and any other "key: value"
// line), so two packages' BenchmarkParse are two benchmarks.
// Settings.Ignore (WithIgnore) drops keys from that, as benchstat's
// -ignore does.
//
// Units are tidied as benchstat tidies them (ns/op becomes sec/op). For
// units where higher is better (throughput: a unit ending in "/s", or a
// unit declared "better=higher") an increase is an improvement, and
// Row.HigherIsBetter says so. Report.Geomeans holds benchstat's geomean
// rows.
func Compare(base, head io.Reader, opts ...Option) (*Report, error) {
	s := DefaultSettings()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&s); err != nil {
			return nil, err
		}
	}
	br, err := newReader(s.Ignore)
	if err != nil {
		return nil, err
	}
	bv, bh, err := br.read("base", base)
	if err != nil {
		return nil, err
	}
	hv, hh, err := br.read("head", head)
	if err != nil {
		return nil, err
	}
	rep := &Report{Settings: s, BaseRuns: bv.runs, HeadRuns: hv.runs}
	higher := func(unit string) bool {
		return bh[unit] || hh[unit] || strings.HasSuffix(unit, "/s")
	}
	keys := map[key]bool{}
	for k := range bv.vals {
		keys[k] = true
	}
	for k := range hv.vals {
		keys[k] = true
	}
	for k := range keys {
		row := Row{Name: k.name, Unit: k.unit, Config: br.configMap(k.config), P: 1, Q: 1, Test: "none"}
		b, inB := bv.vals[k]
		h, inH := hv.vals[k]
		row.HigherIsBetter = higher(k.unit)
		if inB {
			row.Base = Stats{Median: stats.Median(b), Runs: len(b), CI: s.interval(b), Min: slices.Min(b), Max: slices.Max(b)}
		}
		if inH {
			row.Head = Stats{Median: stats.Median(h), Runs: len(h), CI: s.interval(h), Min: slices.Min(h), Max: slices.Max(h)}
		}
		row.Delta = row.Head.Median - row.Base.Median
		switch {
		case !inB:
			row.Verdict = diff.New
		case !inH:
			row.Verdict = diff.Gone
		case exactUnit(k.unit) && exactVerdict(&row, b, h, diff.DefaultAllocTolerance):
			// Judged exactly; runs that disagree fall through to the
			// statistics, with a warning on the row.
		default:
			var c benchmath.Comparison
			row.Test, c = s.compareRuns(b, h)
			row.P, row.Q = c.P, c.P
			for _, w := range c.Warnings {
				row.Warnings = append(row.Warnings, w.Error())
			}
			if row.Test == "mann-whitney" {
				row.tooFew = rankTooFew(c)
			}
			if row.Base.Median != 0 {
				row.Relative = row.Head.Median/row.Base.Median - 1
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	var up, down, cand []int
	for i := range rep.Rows {
		if rep.Rows[i].Verdict != "" {
			continue
		}
		cand = append(cand, i)
		if worse(rep.Rows[i]) {
			up = append(up, i)
		} else {
			down = append(down, i)
		}
	}
	benjaminiHochberg(rep.Rows, up)
	benjaminiHochberg(rep.Rows, down)
	for _, i := range cand {
		// As in diff.Compare: the family is every result on both sides,
		// the minimum effect applies after the adjustment.
		row := &rep.Rows[i]
		// From zero (no allocation) to any amount is a change of any size.
		big := math.Abs(row.Relative) >= s.MinRelative || row.Base.Median == 0 && row.Head.Median != 0
		switch {
		case !big:
			row.Verdict, row.Q = diff.Unchanged, 1
		case row.Q >= s.Alpha:
			row.Verdict = diff.Unchanged
		case worse(*row):
			row.Verdict = diff.Regressed
		default:
			row.Verdict = diff.Improved
		}
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool {
		a, b := &rep.Rows[i], &rep.Rows[j]
		if ra, rb := verdictRank(a.Verdict), verdictRank(b.Verdict); ra != rb {
			return ra < rb
		}
		if ca, cb := configString(a.Config), configString(b.Config); ca != cb {
			return ca < cb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return br.units[a.Unit] < br.units[b.Unit] // as the input lists them
	})
	rep.Warnings = append(rep.Warnings, testWarnings(rep.Rows, "results", s.Alpha)...)
	rep.Warnings = append(rep.Warnings, configMismatch(rep.Rows)...)
	rep.Geomeans = geomeans(rep.Rows)
	for _, row := range rep.Rows {
		if math.IsInf(row.Base.CI.Lo, 0) || math.IsInf(row.Base.CI.Hi, 0) || math.IsInf(row.Head.CI.Lo, 0) || math.IsInf(row.Head.CI.Hi, 0) {
			rep.Warnings = append(rep.Warnings, "a 95% confidence interval of a median needs at least 6 runs (benchstat: \"need >= 6 samples\"), so with fewer a cell gives its median and the range of its runs, lowest to highest, instead of a ±; run go test -count 6 or more")
			break
		}
	}
	return rep, nil
}

// Report is the result of Compare: plain data, written by its Write
// methods.
type Report struct {
	// Settings are those Compare used.
	Settings Settings
	// BaseRuns and HeadRuns are the most runs of any benchmark on each
	// side.
	BaseRuns, HeadRuns int
	// Rows are the results, one per benchmark and unit: regressions
	// first, then improvements, new, gone and unchanged, each by
	// configuration, name and the order the input lists the units in.
	Rows []Row
	// Geomeans are benchstat's geomean rows.
	Geomeans []Geomean
	// Warnings concern the whole comparison: too few runs, benchmarks on
	// one side only because their configuration differs.
	Warnings []string
}

// Row is one benchmark's result in one unit.
type Row struct {
	// Name is the benchmark's full name, as benchstat's .fullname
	// ("Parse-2", with sub-benchmark and GOMAXPROCS suffix).
	Name string
	// Config is its file-level configuration: the "key: value" lines
	// `go test` prints before it, such as pkg, goos, goarch and cpu, less
	// the ignored keys.
	Config map[string]string
	// Unit is tidied as benchstat tidies it: sec/op, B/op, B/s.
	Unit string
	// HigherIsBetter is set for a unit where an increase is an
	// improvement (throughput).
	HigherIsBetter bool
	// Base and Head are each side's runs; zero on the side a New or Gone
	// result is missing from.
	Base, Head Stats
	// Delta is Head.Median − Base.Median; Relative is Head.Median /
	// Base.Median − 1, as benchstat shows it (+103% when throughput
	// doubled); 0 for new and gone results and from a base of 0.
	Delta, Relative float64
	// P is the test's p-value, 1 when untested (0 for a change of an
	// exact count); Q its false-discovery-rate adjusted value, 1 below
	// the minimum change.
	P, Q float64
	// Test is the test that gave P: "mann-whitney",
	// "welch-t", "exact" (B/op, allocs/op: no statistics)
	// or "none".
	Test    string
	Verdict diff.Verdict
	// Warnings are benchmath's (too few runs) and the exact counts' (runs
	// that disagree).
	Warnings []string

	// tooFew is the runs a side of a Mann–Whitney test whose smallest
	// possible p-value is not below alpha (zero otherwise).
	tooFew [2]int
}

// Stats is one side of a result: the statistics of its runs (a
// comparison of profiles has diff.Value instead).
type Stats struct {
	// Median is the median of the runs.
	Median float64
	// Runs is how many runs measured it.
	Runs int
	// CI is the 95% confidence interval of the median (benchstat's ±);
	// infinite with fewer than 6 runs.
	CI Interval
	// Min and Max are the smallest and largest run: what fewer than 6
	// runs can say of their spread (the range of 5 runs holds the median
	// 15 times in 16).
	Min, Max float64
}

// Counts returns how many rows have each verdict.
func (r *Report) Counts() map[diff.Verdict]int {
	c := map[diff.Verdict]int{}
	for _, row := range r.Rows {
		c[row.Verdict]++
	}
	return c
}

// Regressions returns the rows whose verdict is diff.Regressed.
func (r *Report) Regressions() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == diff.Regressed {
			out = append(out, row)
		}
	}
	return out
}

// Failed reports whether a benchmark result regressed.
func (r *Report) Failed() bool { return len(r.Regressions()) > 0 }

// worse reports whether a benchmark result moved in the direction that is
// worse for its unit: up, or down where higher is better.
func worse(row Row) bool {
	if row.HigherIsBetter {
		return row.Delta < 0
	}
	return row.Delta > 0
}

// Interval is a confidence interval of a benchmark's median.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// interval is the 95% confidence interval of the median of vals under the
// settings' assumption, as benchstat computes its ±.
func (s *Settings) interval(vals []float64) Interval {
	th := benchmath.DefaultThresholds
	smp := benchmath.NewSample(vals, &th)
	var sum benchmath.Summary
	if s.Assume == diff.AssumeNormal {
		sum = benchmath.AssumeNormal.Summary(smp, 0.95)
	} else {
		sum = benchmath.AssumeNothing.Summary(smp, 0.95)
	}
	return Interval{Lo: sum.Lo, Hi: sum.Hi}
}

// spread is the ± benchstat prints beside a median: the larger distance
// from the median to either end of its confidence interval, as a
// percentage of the median ("∞" and "?" as benchstat says them).
func spread(center float64, ci Interval) string {
	return benchmath.Summary{Center: center, Lo: ci.Lo, Hi: ci.Hi}.PctRangeString()
}

// Geomean is benchstat's summary row of one table: the geometric mean of
// the medians of one unit's benchmarks with one configuration, and of
// their head/base ratios.
type Geomean struct {
	Config map[string]string `json:"config"`
	Unit   string            `json:"unit"`
	// Benchmarks is how many results the geomean is taken over.
	Benchmarks int `json:"benchmarks"`
	// Base and Head are the geomeans of each side's medians; 0 when a
	// median is not positive (benchstat: "summaries must be >0").
	Base float64 `json:"base"`
	Head float64 `json:"head"`
	// Relative is the geomean of the head/base ratios of the results
	// on both sides, less 1 (0/0 counts as 1, as benchstat counts it);
	// valid only when RatioOK.
	Relative float64 `json:"relative"`
	RatioOK  bool    `json:"ratio_ok"`
	// Warnings are benchstat's: sets that differ, values not positive.
	Warnings []string `json:"warnings,omitempty"`
}

// geomeans computes benchstat's geomean row for each table (unit and
// configuration) of more than one benchmark, as benchstat's text output
// shows it.
func geomeans(rows []Row) []Geomean {
	type tab struct {
		cfg  map[string]string
		unit string
		rows []Row
	}
	var order []string
	tabs := map[string]*tab{}
	for _, row := range rows {
		k := configString(row.Config) + "\x00" + row.Unit
		t := tabs[k]
		if t == nil {
			t = &tab{cfg: row.Config, unit: row.Unit}
			tabs[k] = t
			order = append(order, k)
		}
		t.rows = append(t.rows, row)
	}
	sort.Strings(order)
	var out []Geomean
	for _, k := range order {
		t := tabs[k]
		if len(t.rows) < 2 {
			continue
		}
		g := Geomean{Config: t.cfg, Unit: t.unit, Benchmarks: len(t.rows)}
		var base, head, ratios []float64
		nBase, badRatio := 0, false
		for _, row := range t.rows {
			if row.Verdict != diff.New {
				base = append(base, row.Base.Median)
				nBase++
			}
			if row.Verdict != diff.Gone {
				head = append(head, row.Head.Median)
			}
			if row.Verdict == diff.New || row.Verdict == diff.Gone {
				continue
			}
			switch a, b := row.Head.Median, row.Base.Median; {
			case a == b:
				ratios = append(ratios, 1)
			case b == 0:
				badRatio = true
				ratios = append(ratios, 0) // keeps the count, as benchstat
			default:
				ratios = append(ratios, a/b)
			}
		}
		if nBase != len(ratios) {
			g.Warnings = append(g.Warnings, "benchmark set differs from baseline; geomeans may not be comparable")
		}
		var ok bool
		if g.Base, ok = geomean(base); !ok {
			g.Warnings = append(g.Warnings, "base: summaries must be >0 to compute geomean")
		}
		if g.Head, ok = geomean(head); !ok {
			g.Warnings = append(g.Warnings, "head: summaries must be >0 to compute geomean")
		}
		if !badRatio {
			if r, ok := geomean(ratios); ok {
				g.Relative, g.RatioOK = r-1, true
			} else {
				g.Warnings = append(g.Warnings, "ratios must be >0 to compute geomean")
			}
		}
		out = append(out, g)
	}
	return out
}

// geomean is the geometric mean of xs, false when one is not positive.
func geomean(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	var sum float64
	for _, x := range xs {
		if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs))), true
}
