package diff

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/internal/stats"
	"golang.org/x/perf/benchmath"
)

// BenchSchemaVersion names the JSON schema of CompareBench's reports.
const BenchSchemaVersion = "hotbudget.bench/v2"

// CompareBench compares `go test -bench` outputs (the benchfmt format;
// several -count runs per benchmark) with the same verdict engine as
// Compare: for each benchmark and unit, a Mann–Whitney U test over the runs
// (benchmath.AssumeNothing, with its warnings when there are too few runs),
// Benjamini–Hochberg across all of them, and the minimum relative change.
//
// Benchmarks are told apart as benchstat tells them apart by default
// (-table .config -row .fullname): by their full name (Parse-2, with
// sub-benchmark and GOMAXPROCS suffix) and by the file-level configuration
// printed before them (pkg, goos, goarch, cpu and any other "key: value"
// line), so two packages' BenchmarkParse are two benchmarks.
// Settings.BenchIgnore (WithBenchIgnore) drops keys from that, as
// benchstat's -ignore does.
//
// Row.Name is the full name, Row.Config the configuration, Row.Unit the
// unit (tidied as benchstat does: ns/op becomes sec/op), Base.Metric and
// Head.Metric the medians, Row.BaseCI and Row.HeadCI their 95% confidence
// intervals (benchstat's ±), Delta and Relative the change of the medians
// as benchstat shows it (head − base; +103% when throughput doubled). For
// units where higher is better (throughput: a unit ending in "/s", or a
// unit declared "better=higher") an increase is an improvement, and
// Row.HigherIsBetter says so. Report.Geomeans holds benchstat's geomean
// rows. The report's writers word it for benchmarks (its JSON schema is
// BenchSchemaVersion).
//
// The test is the one Settings.Assume names: Welch's t-test with
// AssumeNormal, Mann–Whitney U otherwise. AssumeModel, the default for
// functions, needs a family of functions to learn noise from; benchmarks
// have none, so they are judged with Mann–Whitney U as benchstat judges
// them, and the report says so.
func CompareBench(base, head io.Reader, opts ...Option) (*Report, error) {
	s, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	br, err := newBenchReader(s.BenchIgnore)
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
	rep := &Report{Settings: s.Settings, Base: Side{Runs: bv.runs}, Head: Side{Runs: hv.runs}, bench: true}
	higher := func(unit string) bool {
		return bh[unit] || hh[unit] || strings.HasSuffix(unit, "/s")
	}
	keys := map[benchKey]bool{}
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
			row.Base.Metric = stats.Median(b)
			row.Base.Samples = int64(len(b))
			row.BaseCI = s.benchInterval(b)
		}
		if inH {
			row.Head.Metric = stats.Median(h)
			row.Head.Samples = int64(len(h))
			row.HeadCI = s.benchInterval(h)
		}
		row.Delta = row.Head.Metric - row.Base.Metric
		switch {
		case !inB:
			row.Verdict = New
		case !inH:
			row.Verdict = Gone
		case exactBenchUnit(k.unit) && exactBenchVerdict(&row, b, h, DefaultAllocTolerance):
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
			if row.Base.Metric != 0 {
				row.Relative = row.Head.Metric/row.Base.Metric - 1
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
		// As in Compare: the family is every result on both sides, the
		// minimum effect applies after the adjustment.
		row := &rep.Rows[i]
		// From zero (no allocation) to any amount is a change of any size.
		big := math.Abs(row.Relative) >= s.MinRelative || row.Base.Metric == 0 && row.Head.Metric != 0
		switch {
		case !big:
			row.Verdict, row.Q = Unchanged, 1
		case row.Q >= s.Alpha:
			row.Verdict = Unchanged
		case worse(*row):
			row.Verdict = Regressed
		default:
			row.Verdict = Improved
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
	rep.Geomeans = benchGeomeans(rep.Rows)
	for _, row := range rep.Rows {
		if math.IsInf(row.BaseCI.Lo, 0) || math.IsInf(row.BaseCI.Hi, 0) || math.IsInf(row.HeadCI.Lo, 0) || math.IsInf(row.HeadCI.Hi, 0) {
			rep.Warnings = append(rep.Warnings, "± ∞: a 95% confidence interval of a median needs at least 6 runs (benchstat: \"need >= 6 samples\"); run go test -count 6 or more")
			break
		}
	}
	return rep, nil
}

// worse reports whether a benchmark result moved in the direction that is
// worse for its unit: up, or down where higher is better.
func worse(row Row) bool {
	if row.HigherIsBetter {
		return row.Delta < 0
	}
	return row.Delta > 0
}

// Interval is a confidence interval of a benchmark's median (CompareBench).
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// benchInterval is the 95% confidence interval of the median of vals
// under the settings' assumption, as benchstat computes its ±.
func (s *engine) benchInterval(vals []float64) Interval {
	th := benchmath.DefaultThresholds
	smp := benchmath.NewSample(vals, &th)
	var sum benchmath.Summary
	if s.Assume == AssumeNormal {
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

// BenchGeomean is benchstat's summary row of one table: the geometric
// mean of the medians of one unit's benchmarks with one configuration,
// and of their head/base ratios.
type BenchGeomean struct {
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

// benchGeomeans computes benchstat's geomean row for each table (unit and
// configuration) of more than one benchmark, as benchstat's text output
// shows it.
func benchGeomeans(rows []Row) []BenchGeomean {
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
	var out []BenchGeomean
	for _, k := range order {
		t := tabs[k]
		if len(t.rows) < 2 {
			continue
		}
		g := BenchGeomean{Config: t.cfg, Unit: t.unit, Benchmarks: len(t.rows)}
		var base, head, ratios []float64
		nBase, badRatio := 0, false
		for _, row := range t.rows {
			if row.Verdict != New {
				base = append(base, row.Base.Metric)
				nBase++
			}
			if row.Verdict != Gone {
				head = append(head, row.Head.Metric)
			}
			if row.Verdict == New || row.Verdict == Gone {
				continue
			}
			switch a, b := row.Head.Metric, row.Base.Metric; {
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

// WithBenchIgnore makes CompareBench ignore these configuration keys when
// it tells benchmarks apart (Settings.BenchIgnore; benchstat's -ignore): a
// file-level key such as "cpu" or "goos", or a sub-name key such as
// "/gomaxprocs".
func WithBenchIgnore(keys ...string) Option {
	return optionFunc(func(s *Settings) error {
		for _, k := range keys {
			if !benchKeyRE.MatchString(k) {
				return fmt.Errorf("diff: cannot ignore %q: want a configuration key such as cpu or goos, or a sub-name key such as /gomaxprocs", k)
			}
		}
		s.BenchIgnore = append(s.BenchIgnore[:len(s.BenchIgnore):len(s.BenchIgnore)], keys...)
		return nil
	})
}
