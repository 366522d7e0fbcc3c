package diff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"
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

// benchKeyRE is a key benchproc projects on its own: a file configuration
// key or a sub-name key, without sort orders or filters.
var benchKeyRE = regexp.MustCompile(`^/?[a-z][^\s:,@()"*/]*$`)

type benchKey struct {
	config     benchproc.Key
	name, unit string
}

type benchSide struct {
	vals map[benchKey][]float64
	runs int // most runs of any benchmark
}

// benchReader projects results of both sides on the same keys.
type benchReader struct {
	config, name *benchproc.Projection
	nameField    *benchproc.Field
	units        map[string]int // order of first appearance
}

func newBenchReader(ignore []string) (*benchReader, error) {
	var p benchproc.ProjectionParser
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		return nil, err
	}
	config, err := p.Parse(".config", filter)
	if err != nil {
		return nil, err
	}
	name, err := p.Parse(".fullname", filter)
	if err != nil {
		return nil, err
	}
	for _, k := range ignore {
		if !benchKeyRE.MatchString(k) {
			return nil, fmt.Errorf("diff: cannot ignore %q: want a configuration key such as cpu or goos, or a sub-name key such as /gomaxprocs", k)
		}
		// Parsed keys are excluded from .config and .fullname.
		if _, err := p.Parse(k, filter); err != nil {
			return nil, fmt.Errorf("diff: ignoring %q: %w", k, err)
		}
	}
	return &benchReader{config: config, name: name, nameField: name.Fields()[0], units: map[string]int{}}, nil
}

// configMap is k's configuration, blank values left out.
func (br *benchReader) configMap(k benchproc.Key) map[string]string {
	m := map[string]string{}
	for _, f := range br.config.FlattenedFields() {
		if v := strings.TrimSpace(k.Get(f)); v != "" {
			m[f.Name] = v
		}
	}
	return m
}

// read reads one benchfmt stream; higher lists the units declared
// better=higher.
func (br *benchReader) read(name string, r io.Reader) (*benchSide, map[string]bool, error) {
	if r == nil {
		return nil, nil, fmt.Errorf("diff: no %s benchmark input", name)
	}
	rd := benchfmt.NewReader(r, name)
	sd := &benchSide{vals: map[benchKey][]float64{}}
	var syntax []string
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			cfg := br.config.Project(rec)
			full := br.name.Project(rec).Get(br.nameField)
			for _, v := range rec.Values {
				if _, ok := br.units[v.Unit]; !ok {
					br.units[v.Unit] = len(br.units)
				}
				k := benchKey{cfg, full, v.Unit}
				sd.vals[k] = append(sd.vals[k], v.Value)
				sd.runs = max(sd.runs, len(sd.vals[k]))
			}
		case *benchfmt.SyntaxError:
			syntax = append(syntax, rec.Error())
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, fmt.Errorf("diff: reading %s benchmarks: %w", name, err)
	}
	if len(sd.vals) == 0 {
		msg := fmt.Sprintf("diff: %s has no benchmark results", name)
		if len(syntax) > 0 {
			msg += ": " + syntax[0]
		}
		return nil, nil, errors.New(msg)
	}
	higher := map[string]bool{}
	for k, m := range rd.Units() {
		if k.Key == "better" && m.Value == "higher" {
			higher[k.Unit] = true
		}
	}
	return sd, higher, nil
}

// configMismatch explains benchmarks found on one side only because their
// configuration differs between the sides (another machine, another Go
// version): they are new and gone instead of compared.
func configMismatch(rows []Row) []string {
	type pair struct{ base, head string }
	diffs := map[string]map[pair]bool{}
	gone := map[string][]map[string]string{}
	for _, row := range rows {
		if row.Verdict == Gone {
			gone[row.Name+" "+row.Unit] = append(gone[row.Name+" "+row.Unit], row.Config)
		}
	}
	n := 0
	for _, row := range rows {
		if row.Verdict != New {
			continue
		}
		found := false
		for _, bc := range gone[row.Name+" "+row.Unit] {
			for _, k := range configKeys(bc, row.Config) {
				if bc[k] == row.Config[k] || k == "pkg" && bc[k] != "" && row.Config[k] != "" {
					continue // another package's benchmark of the same name
				}
				if diffs[k] == nil {
					diffs[k] = map[pair]bool{}
				}
				diffs[k][pair{bc[k], row.Config[k]}] = true
				found = true
			}
		}
		if found {
			n++
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	var keys, parts []string
	for k := range diffs {
		keys = append(keys, k)
	}
	sortConfigKeys(keys)
	for _, k := range keys {
		var ps []string
		for p := range diffs[k] {
			ps = append(ps, fmt.Sprintf("%q in base, %q in head", p.base, p.head))
		}
		sort.Strings(ps)
		parts = append(parts, k+" "+strings.Join(ps, "; "))
	}
	return []string{fmt.Sprintf("%d benchmark results are on one side only because their configuration differs (%s): they are not compared; ignore the key to compare them anyway (benchstat's -ignore; hotbudget bench --ignore %s)",
		n, strings.Join(parts, ", "), strings.Join(keys, ","))}
}

// configKeys lists the keys of the maps in the usual order.
func configKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sortConfigKeys(keys)
	return keys
}

// sortConfigKeys sorts keys in the order `go test` prints them, then
// alphabetically.
func sortConfigKeys(keys []string) {
	rank := map[string]int{"goos": 1, "goarch": 2, "pkg": 3, "cpu": 4}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank[keys[i]], rank[keys[j]]
		if ri == 0 {
			ri = len(rank) + 1
		}
		if rj == 0 {
			rj = len(rank) + 1
		}
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
}

// configString is m in a fixed order, for sorting and grouping.
func configString(m map[string]string) string {
	var b strings.Builder
	for _, k := range configKeys(m) {
		fmt.Fprintf(&b, "%s\x00%s\x00", k, m[k])
	}
	return b.String()
}

// benchLayout splits the rows' configuration keys into those every row
// shares with one value (printed once) and those that vary (a column).
func benchLayout(rows []Row) (common, vary []string) {
	keys := configKeys(func() []map[string]string {
		ms := make([]map[string]string, len(rows))
		for i, r := range rows {
			ms[i] = r.Config
		}
		return ms
	}()...)
	for _, k := range keys {
		same := true
		for _, r := range rows {
			if v, ok := r.Config[k]; !ok || v != rows[0].Config[k] {
				same = false
				break
			}
		}
		if same {
			common = append(common, k)
		} else {
			vary = append(vary, k)
		}
	}
	return common, vary
}

// benchName names a benchmark in a summary: its full name, with its unit
// if unit is set, and its package and the keys that tell it apart from
// other rows, as "Parse-2 sec/op (example.com/app, goarch=arm64)".
//
// Every part comes from the benchmark output and is shortened to
// textfmt.MaxName characters; the writers escape the whole.
func benchName(row Row, vary []string, unit bool) string {
	short := func(s string) string { return textfmt.Shorten(s, textfmt.MaxName) }
	name := short(row.Name)
	if unit {
		name += " " + short(row.Unit)
	}
	var extra []string
	if p := row.Config["pkg"]; p != "" {
		extra = append(extra, short(p))
	}
	for _, k := range vary {
		if k != "pkg" && row.Config[k] != "" {
			extra = append(extra, short(k)+"="+short(row.Config[k]))
		}
	}
	if len(extra) == 0 {
		return name
	}
	return name + " (" + strings.Join(extra, ", ") + ")"
}

func (r *Report) benchDescribe() string {
	test := "Mann-Whitney U"
	switch r.Settings.Assume {
	case AssumeNormal:
		test = "Welch's t-test (runs assumed normal)"
	case AssumeModel:
		test = "Mann-Whitney U as benchstat (no noise model is learned across benchmarks)"
	}
	return fmt.Sprintf("medians over runs per benchmark and unit; %s; false-discovery rate %g; minimum change %.0f%%",
		test, r.Settings.Alpha, r.Settings.MinRelative*100)
}

func benchRuns(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// benchCell is a median with benchstat's ±, "49.58µ sec/op ± 80%", scaled
// as benchstat scales a row: both sides with the prefix that suits the
// smaller.
func benchCell(row Row, v float64, ci Interval, present bool) string {
	if !present {
		return "-"
	}
	var vals []float64
	if row.Verdict != New {
		vals = append(vals, row.Base.Metric)
	}
	if row.Verdict != Gone {
		vals = append(vals, row.Head.Metric)
	}
	sc := benchunit.CommonScale(vals, benchunit.ClassOf(row.Unit))
	return sc.Format(v) + " " + textfmt.Name(row.Unit) + " ± " + spread(v, ci)
}

func benchBaseCell(row Row) string {
	return benchCell(row, row.Base.Metric, row.BaseCI, row.Verdict != New)
}

func benchHeadCell(row Row) string {
	return benchCell(row, row.Head.Metric, row.HeadCI, row.Verdict != Gone)
}

// benchChange is a result's change as benchstat prints it: the change of
// the medians, two decimals, whatever direction is better.
func benchChange(row Row) string {
	switch {
	case row.Verdict == New:
		return "new"
	case row.Verdict == Gone:
		return "gone"
	case row.Base.Metric == 0 && row.Head.Metric == 0:
		return "~"
	case row.Base.Metric == 0:
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", row.Relative*100)
}

// geomeanCells are the base, head and change cells of a geomean row.
func geomeanCells(g BenchGeomean) (base, head, change string) {
	val := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return benchunit.Scale(v, benchunit.ClassOf(g.Unit)) + " " + textfmt.Name(g.Unit)
	}
	change = "?"
	if g.RatioOK {
		change = fmt.Sprintf("%+.2f%%", g.Relative*100)
	}
	return val(g.Base), val(g.Head), change
}

func (r *Report) benchSummary(vary []string) string {
	c := r.Counts()
	if c[Regressed] == 0 {
		return fmt.Sprintf("no regression among %d benchmark results (%d improved, %d new, %d gone)",
			len(r.Rows), c[Improved], c[New], c[Gone])
	}
	var names []string
	for _, row := range r.Regressions() {
		names = append(names, benchName(row, vary, true))
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return fmt.Sprintf("%d of %d benchmark results regressed: %s", c[Regressed], len(r.Rows), strings.Join(names, ", "))
}

// writeBenchText is WriteText for benchmarks: the configuration every
// benchmark shares printed once, as benchstat does, and a column for each
// key that varies (pkg, with several packages).
func (r *Report) writeBenchText(w io.Writer) error {
	common, vary := benchLayout(r.Rows)
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s\nhead: %s\n", benchRuns(r.Base.Runs), benchRuns(r.Head.Runs))
	fmt.Fprintln(&b, "compared:", r.benchDescribe())
	for _, warn := range r.Warnings {
		fmt.Fprintln(&b, "warning:", textfmt.Line(warn))
	}
	for _, k := range common {
		fmt.Fprintf(&b, "%s: %s\n", textfmt.Name(k), textfmt.Name(r.Rows[0].Config[k]))
	}
	fmt.Fprintln(&b)
	// The configuration columns and the name are left-aligned in one
	// last cell; tabwriter right-aligns the numbers before it.
	width := make([]int, len(vary))
	for i, k := range vary {
		width[i] = len(textfmt.Name(k))
		for _, row := range r.Rows {
			width[i] = max(width[i], len(textfmt.Name(row.Config[k])))
		}
	}
	label := func(cells []string, name string) string {
		var l strings.Builder
		for i, c := range cells {
			fmt.Fprintf(&l, "%-*s  ", width[i], textfmt.Name(c))
		}
		return l.String() + textfmt.Name(name)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "base\thead\tchange\tp\tverdict\t\t%s\n", label(vary, "benchmark"))
	for _, row := range r.Rows {
		cells := make([]string, len(vary))
		for i, k := range vary {
			cells[i] = row.Config[k]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", benchBaseCell(row), benchHeadCell(row),
			benchChange(row), pString(row), row.Verdict, label(cells, row.Name))
	}
	for _, g := range r.Geomeans {
		cells := make([]string, len(vary))
		for i, k := range vary {
			cells[i] = g.Config[k]
		}
		base, head, change := geomeanCells(g)
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t%s\n", base, head, change, label(cells, "geomean "+g.Unit))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range r.Geomeans {
		for _, warn := range g.Warnings {
			if strings.HasPrefix(warn, "benchmark set differs") {
				fmt.Fprintf(&b, "geomean %s: %s\n", textfmt.Name(g.Unit), textfmt.Line(warn))
			}
		}
	}
	for _, row := range r.Rows {
		for _, warn := range row.Warnings {
			if row.Verdict != Unchanged {
				fmt.Fprintf(&b, "%s: %s\n", textfmt.Line(benchName(row, vary, true)), textfmt.Line(warn))
			}
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, textfmt.Line(r.benchSummary(vary)))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBenchMarkdown is WriteMarkdown for benchmarks.
func (r *Report) writeBenchMarkdown(w io.Writer) error {
	common, vary := benchLayout(r.Rows)
	var b strings.Builder
	icon := "✅"
	if len(r.Regressions()) > 0 {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s hotbudget bench: %s\n\n", icon, textfmt.MarkdownEscape(r.benchSummary(vary)))
	fmt.Fprintf(&b, "Base: %s  \nHead: %s  \nCompared: %s.", benchRuns(r.Base.Runs), benchRuns(r.Head.Runs), r.benchDescribe())
	if len(common) > 0 {
		var cfg []string
		for _, k := range common {
			cfg = append(cfg, fmt.Sprintf("%s %s", k, textfmt.MarkdownCode(r.Rows[0].Config[k])))
		}
		fmt.Fprintf(&b, "  \nConfiguration: %s.", strings.Join(cfg, ", "))
	}
	fmt.Fprint(&b, "\n\n")
	writeMarkdownWarnings(&b, r.Warnings)
	table := func(rows []Row) {
		fmt.Fprint(&b, "|")
		for _, k := range vary {
			fmt.Fprintf(&b, " %s |", textfmt.MarkdownEscape(k))
		}
		fmt.Fprintln(&b, " benchmark | base | head | change | p | verdict |")
		fmt.Fprintln(&b, "|"+strings.Repeat(":--|", len(vary))+":--|--:|--:|--:|--:|:--|")
		for _, row := range rows {
			fmt.Fprint(&b, "|")
			for _, k := range vary {
				fmt.Fprintf(&b, " %s |", textfmt.MarkdownCode(row.Config[k]))
			}
			// A unit is the benchmark's own (b.ReportMetric): escaped.
			md := row
			md.Unit = textfmt.MarkdownEscape(row.Unit)
			fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s |\n", textfmt.MarkdownCode(row.Name), benchBaseCell(md),
				benchHeadCell(md), benchChange(row), pString(row), row.Verdict)
		}
	}
	changed, same := splitChanged(r.Rows, nil)
	if len(changed) > 0 {
		table(changed)
		fmt.Fprintln(&b)
	}
	writeFolded(&b, same, "unchanged benchmark results", "first", table)
	if len(r.Geomeans) > 0 {
		fmt.Fprint(&b, "\n|")
		for _, k := range vary {
			fmt.Fprintf(&b, " %s |", textfmt.MarkdownEscape(k))
		}
		fmt.Fprintln(&b, " geomean | base | head | change |")
		fmt.Fprintln(&b, "|"+strings.Repeat(":--|", len(vary))+":--|--:|--:|--:|")
		for _, g := range r.Geomeans {
			fmt.Fprint(&b, "|")
			for _, k := range vary {
				fmt.Fprintf(&b, " %s |", textfmt.MarkdownCode(g.Config[k]))
			}
			md := g
			md.Unit = textfmt.MarkdownEscape(g.Unit)
			base, head, change := geomeanCells(md)
			fmt.Fprintf(&b, " %s | %s | %s | %s |\n", md.Unit, base, head, change)
		}
	}
	_, err := io.WriteString(w, textfmt.LimitMarkdown(b.String(), textfmt.MaxMarkdown))
	return err
}

// benchJSON is the JSON schema of a benchmark report (BenchSchemaVersion).
type benchJSON struct {
	Schema      string          `json:"schema"`
	Assume      Assumption      `json:"assume"`
	Alpha       float64         `json:"alpha"`
	MinRelative float64         `json:"min_relative"`
	Ignore      []string        `json:"ignore"`
	Base        benchJSONSide   `json:"base"`
	Head        benchJSONSide   `json:"head"`
	Regressed   int             `json:"regressed"`
	Improved    int             `json:"improved"`
	New         int             `json:"new"`
	Gone        int             `json:"gone"`
	Benchmarks  []benchJSONItem `json:"benchmarks"`
	Geomeans    []BenchGeomean  `json:"geomeans"`
	Warnings    []string        `json:"warnings"`
}

type benchJSONSide struct {
	Runs int `json:"runs"`
}

type benchJSONItem struct {
	Name     string            `json:"name"`
	Package  string            `json:"package"`
	Config   map[string]string `json:"config"`
	Unit     string            `json:"unit"`
	Better   string            `json:"better"`
	Base     benchJSONValue    `json:"base"`
	Head     benchJSONValue    `json:"head"`
	Delta    float64           `json:"delta"`
	Relative float64           `json:"relative"`
	P        float64           `json:"p"`
	Q        float64           `json:"q"`
	Test     string            `json:"test"`
	Verdict  Verdict           `json:"verdict"`
	Warnings []string          `json:"warnings"`
}

type benchJSONValue struct {
	Median float64  `json:"median"`
	Runs   int64    `json:"runs"`
	CI     Interval `json:"ci"`
	Spread string   `json:"spread"`
}

// writeBenchJSON is WriteJSON for benchmarks:
//
//	{
//	  "schema": "hotbudget.bench/v2",
//	  "assume": "model" | "nothing" | "normal", // as chosen; model judges benchmarks as nothing does
//	  "alpha": 0.05,          // false-discovery rate across results
//	  "min_relative": 0.1,    // smallest relative change judged
//	  "ignore": ["cpu"],      // configuration keys ignored
//	  "base": {"runs": 10},   // most runs of any benchmark
//	  "head": {...},
//	  "regressed": 1, "improved": 0, "new": 0, "gone": 0,
//	  "benchmarks": [{
//	    "name": "Parse-2",    // full name, as benchstat's .fullname
//	    "package": "example.com/app",
//	    "config": {"goos": "linux", "goarch": "amd64", "pkg": "example.com/app", "cpu": "..."},
//	    "unit": "sec/op",     // tidied as benchstat does
//	    "better": "lower" | "higher", // higher for throughput (B/s)
//	    "base": {"median": 1e-6, "runs": 10,
//	             "ci": {"lo": 9e-7, "hi": 1.1e-6}, // 95% interval of the median
//	             "spread": "10%"},                // benchstat's ±
//	    "head": {...},
//	    "delta": head - base,
//	    "relative": head/base - 1, as benchstat shows it (1.03 = +103%,
//	                an improvement when "better" is "higher"),
//	    "p", "q", "test": "mann-whitney" | "welch-t" | "none",
//	    "verdict": "regressed" | "improved" | "unchanged" | "new" | "gone",
//	    "warnings": [...]
//	  }],
//	  "geomeans": [{"config": {...}, "unit": "sec/op", "benchmarks": 3,
//	                "base": 1e-6, "head": 1.2e-6, // geomeans of the medians
//	                "relative": 0.2, "ratio_ok": true, // geomean of head/base, less 1
//	                "warnings": [...]}],
//	  "warnings": [...]
//	}
//
// Version 2 changed "relative" and "delta" of higher-is-better units from
// worse-positive to the change of the values, as benchstat shows it, and
// added "better", "ci", "spread" and "geomeans".
func (r *Report) writeBenchJSON(w io.Writer) error {
	c := r.Counts()
	out := benchJSON{
		Schema: BenchSchemaVersion, Assume: r.Settings.Assume, Alpha: r.Settings.Alpha, MinRelative: r.Settings.MinRelative,
		Ignore: append([]string{}, r.Settings.BenchIgnore...),
		Base:   benchJSONSide{r.Base.Runs}, Head: benchJSONSide{r.Head.Runs},
		Regressed: c[Regressed], Improved: c[Improved], New: c[New], Gone: c[Gone],
		Benchmarks: make([]benchJSONItem, 0, len(r.Rows)),
		Geomeans:   append([]BenchGeomean{}, r.Geomeans...),
		Warnings:   append([]string{}, r.Warnings...),
	}
	for _, row := range r.Rows {
		cfg := row.Config
		if cfg == nil {
			cfg = map[string]string{}
		}
		better := "lower"
		if row.HigherIsBetter {
			better = "higher"
		}
		value := func(v float64, n int64, ci Interval, present bool) benchJSONValue {
			if !present {
				return benchJSONValue{}
			}
			return benchJSONValue{finite(v), n, Interval{finite(ci.Lo), finite(ci.Hi)}, spread(v, ci)}
		}
		out.Benchmarks = append(out.Benchmarks, benchJSONItem{
			Name: row.Name, Package: row.Config["pkg"], Config: cfg, Unit: row.Unit, Better: better,
			Base:  value(row.Base.Metric, row.Base.Samples, row.BaseCI, row.Verdict != New),
			Head:  value(row.Head.Metric, row.Head.Samples, row.HeadCI, row.Verdict != Gone),
			Delta: finite(row.Delta), Relative: finite(row.Relative), P: finite(row.P), Q: finite(row.Q),
			Test: string(row.Test), Verdict: row.Verdict, Warnings: append([]string{}, row.Warnings...),
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
