package diff_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/loaders"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/diff")

func loadGlob(t testing.TB, pattern string) []*profile.Profile {
	t.Helper()
	var ps []*profile.Profile
	for _, f := range glob(t, pattern) {
		p, err := loaders.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// glob returns the files matching pattern, in name order, at least one.
func glob(t testing.TB, pattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	return files
}

// folded reads folded stacks (1 ms a sample).
func folded(t testing.TB, text string) *profile.Profile {
	t.Helper()
	p, err := loaders.Read(strings.NewReader(text), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func one(p *profile.Profile) []*profile.Profile { return []*profile.Profile{p} }

func compare(t testing.TB, base, head []*profile.Profile, opts ...diff.Option) *diff.Report {
	t.Helper()
	r, err := diff.Compare(base, head, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func rowOf(t testing.TB, r *diff.Report, name string) diff.Row {
	t.Helper()
	for _, row := range r.Rows {
		if row.Name == name {
			return row
		}
	}
	t.Fatalf("no row for %s", name)
	return diff.Row{}
}

func verdicts(r *diff.Report) map[string]diff.Verdict {
	m := map[string]diff.Verdict{}
	for _, row := range r.Rows {
		if row.Verdict != diff.Unchanged {
			m[row.Name] = row.Verdict
		}
	}
	return m
}

const (
	baseFolded = "main;handler;parse 400\nmain;handler;render 300\nmain;gc 300\n"
	headFolded = "main;handler;parse 600\nmain;handler;render 300\nmain;gc 300\n"
)

// Worked by hand. Shares: parse 0.4 -> 0.5, render and gc 0.3 -> 0.25
// (handler and main have no self time). Ratios head/base: 1.25, 0.833,
// 0.833; the median is 5/6 and the majority closest to it, the yardstick,
// is render and gc. parse is measured against them: 400 -> 600 samples
// against 600 -> 600, +50%, scale 5/6 (the yardstick's share, 0.6 -> 0.5);
// head's share shown corrected for it, 0.5/(5/6) = 0.6, delta 0.2.
// render and gc: each against the other, unchanged.
//
// Significance, one run a side, three functions (too few to learn the
// run-to-run noise from: the floor, a 5% CV, φ = 0.0025): the log ratio
// ln 1.5 = 0.405465 has variance 1/400 + 1/600 (parse and the yardstick's
// sampling, base) + 1/600 + 1/600 (head) + 2φ = 0.0125, z = 3.6266, and
// the one-sided p is 1.4363e-4.
func TestCompareHandWorked(t *testing.T) {
	r := compare(t, one(folded(t, baseFolded)), one(folded(t, headFolded)))
	parse := rowOf(t, r, "parse")
	if math.Abs(parse.Scale-5.0/6) > 1e-9 {
		t.Errorf("scale = %v, want 5/6", parse.Scale)
	}
	if parse.Verdict != diff.Regressed || math.Abs(parse.Relative-0.5) > 1e-9 || math.Abs(parse.Delta-0.2) > 1e-9 {
		t.Errorf("parse: verdict %s relative %v delta %v, want regressed +0.5 0.2", parse.Verdict, parse.Relative, parse.Delta)
	}
	if math.Abs(parse.Base.Metric-0.4) > 1e-9 || math.Abs(parse.Head.Metric-0.6) > 1e-9 {
		t.Errorf("parse metrics %v -> %v, want 0.4 -> 0.6 (head corrected by the scale)", parse.Base.Metric, parse.Head.Metric)
	}
	if parse.Test != "pair-t" || math.Abs(parse.P/1.4363e-4-1) > 0.001 {
		t.Errorf("parse: test %s p %v, want pair-t and p = 1.4363e-4", parse.Test, parse.P)
	}
	if time.Duration(parse.Base.Self) != 400*time.Millisecond || time.Duration(parse.Head.Self) != 600*time.Millisecond || parse.Head.Samples != 600 {
		t.Errorf("parse values: %+v %+v", parse.Base, parse.Head)
	}
	for _, name := range []string{"render", "gc", "handler", "main"} {
		if row := rowOf(t, r, name); row.Verdict != diff.Unchanged {
			t.Errorf("%s: %s (relative %v), want unchanged", name, row.Verdict, row.Relative)
		}
	}
	if got := verdicts(r); len(got) != 1 {
		t.Errorf("verdicts other than unchanged: %v, want only parse", got)
	}
	if r.Noise.Source != "floor" || r.Noise.Dispersion != 0.0025 {
		t.Errorf("noise %+v, want the floor", r.Noise)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "1 base and 1 head run(s): run-to-run noise is taken as") {
		t.Errorf("one run a side must be said out loud, warnings: %q", r.Warnings)
	}
}

// When one function gets faster every other share grows; a naive share
// comparison would call the others regressed.
func TestImprovementElsewhereIsNotARegression(t *testing.T) {
	base := folded(t, "main;parse 4000\nmain;render 3000\nmain;gc 3000\nmain;log 500\n")
	head := folded(t, "main;parse 2000\nmain;render 3000\nmain;gc 3000\nmain;log 500\n")
	r := compare(t, one(base), one(head))
	want := map[string]diff.Verdict{"parse": diff.Improved}
	if got := verdicts(r); len(got) != 1 || got["parse"] != diff.Improved {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	if p := rowOf(t, r, "parse"); math.Abs(p.Relative+0.5) > 1e-9 {
		t.Errorf("parse relative %v, want -50%%", p.Relative)
	}
}

// TestYardstickHandWorked pins the share normalisation on numbers worked
// out by hand.
func TestYardstickHandWorked(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.6f, want %.6f", name, got, want)
		}
	}

	// One run a side. Shares: base a .5, b .26, c .24; head a .6, b .2,
	// c .2. Ratios head/base: a 1.2, b .769, c .833; the median, .833, is
	// c's, and the majority (two of three) closest to it are c and b. a is
	// measured against b and c together (500 -> 500 ms, scale .8): a
	// 500 -> 750 ms is +50%. A median of the three ratios (.833) would
	// say +44%: a changed function among three pulls the median. b is
	// measured against c alone (scale .833): 260/240 -> 250/250 is -7.7%.
	base := folded(t, "main;a 500\nmain;b 260\nmain;c 240\n")
	head := folded(t, "main;a 750\nmain;b 250\nmain;c 250\n")
	r := compare(t, one(base), one(head))
	a, b := rowOf(t, r, "a"), rowOf(t, r, "b")
	near("a scale", a.Scale, 0.8)
	near("a relative", a.Relative, 0.5)
	near("b scale", b.Scale, 0.2/0.24)
	near("b relative", b.Relative, (250.0/250)/(260.0/240)-1)

	// Two runs a side: the yardstick is taken in every run. Shares:
	//	base run 1: a .5 b .3 c .2    run 2: a .4 b .3 c .3
	//	head run 1: a .6 b .2 c .2    run 2: a .5 b .25 c .25
	// Mean shares a .45 -> .55, b .3 -> .225, c .25 -> .225; ratios 1.22,
	// .75, .9; the majority closest to the median .9 is {c, b}. a is
	// measured against b+c in every run: a/(b+c) base 1 and .667, head 1.5
	// and 1, +50% between the geometric means; the runs are weighted by
	// their precision (how many samples they have), which moves it a
	// little. Scale: the yardstick's geometric mean share, head √(.4·.5)
	// over base √(.5·.6). b is measured against c alone: b/c base 1.5 and
	// 1, head 1 and 1: −18% unweighted.
	runs := func(texts ...string) []*profile.Profile {
		var ps []*profile.Profile
		for _, text := range texts {
			ps = append(ps, folded(t, text))
		}
		return ps
	}
	r = compare(t,
		runs("main;a 50\nmain;b 30\nmain;c 20\n", "main;a 40\nmain;b 30\nmain;c 30\n"),
		runs("main;a 60\nmain;b 20\nmain;c 20\n", "main;a 50\nmain;b 25\nmain;c 25\n"))
	a, b = rowOf(t, r, "a"), rowOf(t, r, "b")
	if math.Abs(a.Relative-0.5) > 0.01 {
		t.Errorf("2 runs: a relative = %.4f, want +50%% within a point", a.Relative)
	}
	near("2 runs: a scale", a.Scale, math.Sqrt(0.4*0.5/(0.5*0.6)))
	if b.Relative < -0.2 || b.Relative > -0.12 {
		t.Errorf("2 runs: b relative = %.4f, want about -18%%", b.Relative)
	}
	if a.Test != "moderated-t" {
		t.Errorf("2 runs: test %q", a.Test)
	}
}

// TestSamplingFalseAlarms draws pairs of profiles of the same program,
// seven functions of 5% to 30%, 2000 samples each (pure multinomial
// sampling noise, the one thing one profile a side can model), and
// compares them at the default settings. At most Alpha of the comparisons
// may flag a regression. Taking the yardstick's share as exact, as the
// sampling test once did, flagged 11.7% of them; testing the function
// against the yardstick's samples flags about 3.4%.
func TestSamplingFalseAlarms(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	shares := []float64{0.30, 0.20, 0.15, 0.12, 0.10, 0.08, 0.05}
	draw := func() *profile.Profile { return multinomial(t, r, 2000, shares) }
	const comparisons = 600
	flagged := 0
	for range comparisons {
		if len(compare(t, one(draw()), one(draw())).Regressions()) > 0 {
			flagged++
		}
	}
	if rate := float64(flagged) / comparisons; rate > diff.DefaultSettings().Alpha {
		t.Errorf("%d of %d comparisons of the same program flagged a regression (%.1f%%), want at most %.0f%%",
			flagged, comparisons, 100*rate, 100*diff.DefaultSettings().Alpha)
	}
}

// TestOnly: WithOnly judges only the matching functions; the others still
// count in the yardstick, so the judged functions' numbers do not change.
func TestOnly(t *testing.T) {
	base := folded(t, "main;app.parse 400\nmain;app.render 300\nmain;app.log 200\nruntime.gcBgMarkWorker 100\n")
	head := folded(t, "main;app.parse 400\nmain;app.render 300\nmain;app.log 200\nruntime.gcBgMarkWorker 300\n")
	all := compare(t, one(base), one(head))
	if got := verdicts(all); got["runtime.gcBgMarkWorker"] != diff.Regressed {
		t.Fatalf("without WithOnly: verdicts %v, want the collector regressed", got)
	}
	only := compare(t, one(base), one(head), diff.WithOnly(regexp.MustCompile(`^app\.`)))
	if len(only.Rows) != 3 || len(only.Regressions()) != 0 {
		t.Errorf("WithOnly: %d rows, %d regressions; want the 3 app functions, none regressed", len(only.Rows), len(only.Regressions()))
	}
	for _, name := range []string{"app.parse", "app.render", "app.log"} {
		a, o := rowOf(t, all, name), rowOf(t, only, name)
		if a.Relative != o.Relative || a.Scale != o.Scale || a.P != o.P {
			t.Errorf("%s: relative %v scale %v p %v with WithOnly, %v %v %v without", name, o.Relative, o.Scale, o.P, a.Relative, a.Scale, a.P)
		}
	}
}

// When nearly every share moves together (a profile of another build, in
// which a new runtime takes most of the time), the median-of-ratios
// correction is large and the report says so; an ordinary change elsewhere
// does not warn.
func TestCompositionChangeWarns(t *testing.T) {
	const want = "the shares of most functions moved by a factor of 0.3:"
	base := folded(t, "main;a 3000\nmain;b 3000\nmain;c 3000\nmain;d 1000\n")
	head := folded(t, "main;a 900\nmain;b 900\nmain;c 900\nmain;d 300\n__tsan_read 7000\n")
	r := compare(t, one(base), one(head))
	if !hasWarning(r, want) {
		t.Errorf("warnings %q lack %q", r.Warnings, want)
	}
	base = folded(t, "main;parse 4000\nmain;render 3000\nmain;gc 3000\nmain;log 500\n")
	head = folded(t, "main;parse 2000\nmain;render 3000\nmain;gc 3000\nmain;log 500\n")
	if r := compare(t, one(base), one(head)); hasWarning(r, "the shares of most functions moved") {
		t.Errorf("an improvement of one function warns: %q", r.Warnings)
	}
}

func hasWarning(r *diff.Report, prefix string) bool {
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// A function seen in 3 samples cannot be said to have doubled.
func TestFewSamplesCannotDouble(t *testing.T) {
	base := folded(t, "main;work 997\nmain;tiny 3\n")
	head := folded(t, "main;work 994\nmain;tiny 6\n")
	r := compare(t, one(base), one(head))
	tiny := rowOf(t, r, "tiny")
	if tiny.Verdict != diff.Unchanged || tiny.P < 0.05 {
		t.Errorf("tiny 3 -> 6 samples: %s p=%v, want unchanged with p >= 0.05", tiny.Verdict, tiny.P)
	}
	// The same doubling seen in many samples is a regression.
	base = folded(t, "main;work 9000\nmain;small 1000\n")
	head = folded(t, "main;work 8000\nmain;small 2000\n")
	r = compare(t, one(base), one(head))
	if v := rowOf(t, r, "small").Verdict; v != diff.Regressed {
		t.Errorf("small 1000 -> 2000 samples: %s, want regressed", v)
	}
}

// exact builds a profile of measured durations (no sampling noise).
func exact(t testing.TB, spans map[string]time.Duration) *profile.Profile {
	t.Helper()
	b := pbuild.New(pbuild.Exact)
	root := b.Location(pbuild.Frame{Name: "main"})
	for name, d := range spans {
		b.Add([]*profile.Location{b.Location(pbuild.Frame{Name: name}), root}, 1, int64(d), pbuild.NewLabels())
	}
	p, err := b.Finish("test", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Exact data has no sampling noise: the minimum effect alone decides.
func TestExactData(t *testing.T) {
	base := exact(t, map[string]time.Duration{"a": 100 * time.Millisecond, "b": 100 * time.Millisecond, "c": 100 * time.Millisecond, "d": 10 * time.Millisecond})
	head := exact(t, map[string]time.Duration{"a": 100 * time.Millisecond, "b": 100 * time.Millisecond, "c": 100 * time.Millisecond, "d": 12 * time.Millisecond})
	r := compare(t, one(base), one(head))
	d := rowOf(t, r, "d")
	if d.Verdict != diff.Regressed || d.Test != "exact" {
		t.Errorf("d 10ms -> 12ms exact: %s by %s, want regressed by exact", d.Verdict, d.Test)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("exact data needs no warning about sampling noise: %q", r.Warnings)
	}
	// Below the minimum effect nothing is flagged, however exact.
	head = exact(t, map[string]time.Duration{"a": 100 * time.Millisecond, "b": 100 * time.Millisecond, "c": 100 * time.Millisecond, "d": 10500 * time.Microsecond})
	if got := verdicts(compare(t, one(base), one(head))); len(got) != 0 {
		t.Errorf("d +5%%: %v, want nothing flagged", got)
	}
}

// Real Go profiles, five runs a side, of a program with one function made
// 20% slower (testdata/regress): that function and nothing else regressed.
func TestRegressFixtures(t *testing.T) {
	r := compare(t, loadGlob(t, "../testdata/regress/base-*.pb.gz"), loadGlob(t, "../testdata/regress/head-*.pb.gz"))
	reg := r.Regressions()
	if len(reg) != 1 || reg[0].Name != "main.renderReport" {
		var b bytes.Buffer
		r.Write(&b, "text")
		t.Fatalf("regressions %v, want exactly main.renderReport\n%s", reg, b.String())
	}
	if reg[0].Test != "moderated-t" || reg[0].Relative < 0.1 {
		t.Errorf("renderReport: %s %+.1f%%", reg[0].Test, reg[0].Relative*100)
	}
	// The same runs against themselves: nothing.
	base := loadGlob(t, "../testdata/regress/base-*.pb.gz")
	if got := verdicts(compare(t, base, base)); len(got) != 0 {
		t.Errorf("base against itself: %v", got)
	}
}

// Too few runs: benchmath's warning reaches the row.
func TestMannWhitneyWarnings(t *testing.T) {
	r := compare(t, loadGlob(t, "../testdata/regress/base-[12].pb.gz"), loadGlob(t, "../testdata/regress/head-[12].pb.gz"),
		diff.WithAssumption(diff.AssumeNothing))
	row := rowOf(t, r, "main.renderReport")
	if row.Test != "mann-whitney" || len(row.Warnings) == 0 || !strings.Contains(row.Warnings[0], "need >= 4 samples") {
		t.Errorf("2 runs a side: test %s warnings %q, want benchmath's warning", row.Test, row.Warnings)
	}
	// And, once, the report's, derived from the run counts rather than
	// benchmath's words: 2/C(4,2) = 0.33 and 2/C(6,3) = 0.1 are not below
	// 0.05, 2/C(8,4) = 0.029 is, so 4 runs a side are needed (benchmath
	// agrees).
	if n := len(r.Warnings); n != 1 || !strings.Contains(r.Warnings[0], "with 2 and 2 runs") || !strings.Contains(r.Warnings[0], "need >= 4 runs a side") || !strings.Contains(r.Warnings[0], " functions)") {
		t.Errorf("report warnings %q, want the too-few-runs warning once with a count of functions", r.Warnings)
	}
	// With 4 runs a side the test can flag a change: no such warning.
	r = compare(t, loadGlob(t, "../testdata/regress/base-[1-4].pb.gz"), loadGlob(t, "../testdata/regress/head-[1-4].pb.gz"),
		diff.WithAssumption(diff.AssumeNothing))
	for _, w := range r.Warnings {
		if strings.Contains(w, "need >=") {
			t.Errorf("4 runs a side: %q", w)
		}
	}
}

func TestCleanPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/home/runner/work/app/app/internal/parse/lex.go", "parse/lex.go"},
		{"/tmp/app/internal/parse/lex.go", "parse/lex.go"},
		{"file:///Users/me/src/app/lib/parse.js", "lib/parse.js"},
		{"/root/go/pkg/mod/example.com/m@v1.2.0/x/y.go", "x/y.go"},
		{"/root/go/pkg/mod/example.com/m@v1.2.0/y.go", "m/y.go"},
		{`C:\src\app\lib\parse.js`, "lib/parse.js"},
		{"lex.go", "lex.go"},
		{"", ""},
	} {
		if got := diff.CleanPath(c.in); got != c.want {
			t.Errorf("CleanPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// leaves builds a profile named name in which each of frames is a leaf
// called by main.main (in mainFile, line 1) with counts[i] samples of 1 ms.
func leaves(tb testing.TB, name, mainFile string, frames []pbuild.Frame, counts []int64) *profile.Profile {
	tb.Helper()
	b := pbuild.New(pbuild.Sampled)
	root := b.Location(pbuild.Frame{Name: "main.main", File: mainFile, Line: 1})
	for i, f := range frames {
		b.Add([]*profile.Location{b.Location(f), root}, counts[i], counts[i]*int64(time.Millisecond), pbuild.NewLabels())
	}
	p, err := b.Finish(name, int64(time.Millisecond), 0)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// profileAt makes a one-function-per-file profile whose files sit under dir.
func profileAt(t testing.TB, dir string, line int64, samples map[string]int64) *profile.Profile {
	t.Helper()
	var frames []pbuild.Frame
	var counts []int64
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		frames = append(frames, pbuild.Frame{Name: name, File: dir + "/internal/" + name + "/x.go", Line: line})
		counts = append(counts, samples[name])
	}
	return leaves(t, "test", dir+"/main.go", frames, counts)
}

// Different checkouts and shifted lines still match under every key that
// should match them.
func TestMatchingAcrossBuilds(t *testing.T) {
	m := map[string]int64{"a.F": 300, "b.G": 300, "c.H": 400}
	base := profileAt(t, "/home/runner/work/app/app", 10, m)
	head := profileAt(t, "/tmp/build", 12, m)
	for _, key := range []diff.Key{diff.KeyName, diff.KeyNameFile} {
		r := compare(t, one(base), one(head), diff.WithKey(key))
		for _, row := range r.Rows {
			if row.Verdict == diff.New || row.Verdict == diff.Gone {
				t.Errorf("key %s: %s is %s, want matched", key, row.Name, row.Verdict)
			}
		}
	}
	// Start lines moved between the builds: with the line in the key no
	// function matches, and two sides that share nothing are refused
	// rather than reported as all new and gone.
	_, err := diff.Compare(one(base), one(head), diff.WithKey(diff.KeyNameFileLine))
	if err == nil || !strings.Contains(err.Error(), "share functions holding only 0.0%") || !strings.Contains(err.Error(), "name+file+line") {
		t.Errorf("key name+file+line across builds: err = %v", err)
	}
}

func TestPerOp(t *testing.T) {
	// Head ran twice as long doing twice the operations: per op, parse is
	// unchanged; in absolute time it doubled.
	base := folded(t, "main;loop;parse 500\nmain;loop;render 500\n")
	head := folded(t, "main;loop;parse 1000\nmain;loop;render 1000\n")
	if got := verdicts(compare(t, one(base), one(head), diff.WithOps(100, 200))); len(got) != 0 {
		t.Errorf("per op: %v, want nothing", got)
	}
	if got := verdicts(compare(t, one(base), one(head), diff.WithAnchor("loop"))); len(got) != 0 {
		t.Errorf("per anchor: %v, want nothing", got)
	}
	r := compare(t, one(base), one(head), diff.WithMode(diff.Absolute))
	if v := rowOf(t, r, "parse").Verdict; v != diff.Regressed {
		t.Errorf("absolute: parse %s, want regressed", v)
	}
	if _, err := diff.Compare(one(base), one(head), diff.WithAnchor("nosuch")); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("missing anchor: err = %v", err)
	}
}

// TestPerAnchorMode: an anchor is a mode of its own, PerAnchor, however it
// is asked for: WithAnchor, or WithOps after WithAnchor, and both judge
// alike. The JSON report
// names it as its schema always has, "per-op" with an anchor; PerOp with counts stays
// PerOp and shows values in time, where PerAnchor shows ratios.
func TestPerAnchorMode(t *testing.T) {
	base := folded(t, "main;loop;parse 500\nmain;loop;render 500\n")
	head := folded(t, "main;loop;parse 1000\nmain;loop;render 1500\n")
	var want string
	for i, opts := range [][]diff.Option{
		{diff.WithAnchor("loop")},
		{diff.WithAnchor("loop"), diff.WithOps(100, 200)},
	} {
		r := compare(t, one(base), one(head), opts...)
		if r.Settings.Mode != diff.PerAnchor {
			t.Errorf("case %d: mode %q, want %q", i, r.Settings.Mode, diff.PerAnchor)
		}
		if got := r.FormatMetric(0.4); got != "0.400x" {
			t.Errorf("case %d: a value reads %q, want a ratio to the anchor", i, got)
		}
		var js bytes.Buffer
		if err := r.Write(&js, "json"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(js.String(), `"mode": "per-op",`) || !strings.Contains(js.String(), `"anchor": "loop",`) {
			t.Errorf("case %d: JSON does not say per-op with anchor loop:\n%.300s", i, js.String())
		}
		if i == 0 {
			want = js.String()
		} else if js.String() != want {
			t.Errorf("case %d: the report differs from WithAnchor's", i)
		}
	}
	r := compare(t, one(base), one(head), diff.WithOps(100, 200))
	if r.Settings.Mode != diff.PerOp || r.Settings.Anchor != "" || strings.HasSuffix(r.FormatMetric(0.4), "x") {
		t.Errorf("WithOps: mode %q, anchor %q, value %q: want per-op, in time", r.Settings.Mode, r.Settings.Anchor, r.FormatMetric(0.4))
	}
	if _, err := diff.Compare(one(base), one(head), diff.WithMode(diff.PerAnchor)); err == nil || !strings.Contains(err.Error(), "is set by its unit of work") {
		t.Errorf("WithMode(PerAnchor): err = %v", err)
	}
	if _, err := diff.Compare(one(base), one(head), diff.WithAnchor("loop"), diff.WithMode(diff.Share)); err == nil || !strings.Contains(err.Error(), "contradicts the unit of work") {
		t.Errorf("WithMode(Share) after WithAnchor: err = %v", err)
	}
}

func TestErrors(t *testing.T) {
	p := folded(t, baseFolded)
	for _, c := range []struct {
		name       string
		base, head []*profile.Profile
		opts       []diff.Option
		want       string
	}{
		{"no base", nil, one(p), nil, "no base profiles"},
		{"no head", one(p), nil, nil, "no head profiles"},
		{"nil profile", []*profile.Profile{nil}, one(p), nil, "base profile 1 is nil"},
		{"bad alpha", one(p), one(p), []diff.Option{diff.WithAlpha(1.5)}, "alpha must be in (0,1)"},
		{"bad mode", one(p), one(p), []diff.Option{diff.WithMode("fast")}, `unknown mode "fast"`},
		{"bad ops", one(p), one(p), []diff.Option{diff.WithOps(0, 1)}, "operation counts must be positive"},
		{"per-op alone", one(p), one(p), []diff.Option{diff.WithMode(diff.PerOp)}, "WithOps(base, head) or WithAnchor(function)"},
		{"negative change", one(p), one(p), []diff.Option{diff.WithMinChange(-1)}, "negative minimum"},
		{"negative time change", one(p), one(p), []diff.Option{diff.WithMode(diff.Absolute), diff.WithMinAbsolute(-1)}, "negative minimum"},
		{"time change in share mode", one(p), one(p), []diff.Option{diff.WithMinAbsolute(time.Millisecond)}, "applies in absolute and per-op modes; share mode"},
		{"bad assumption", one(p), one(p), []diff.Option{diff.WithAssumption("lognormal")}, `unknown assumption "lognormal" (want model, nothing or normal)`},
	} {
		_, err := diff.Compare(c.base, c.head, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestFiltersApplyToBothSides(t *testing.T) {
	base := folded(t, baseFolded)
	head := folded(t, headFolded)
	r := compare(t, one(base), one(head), diff.WithSelection(analysis.Selection{Ignore: regexp.MustCompile(`^parse$`)}))
	if got := r.Regressions(); len(got) != 0 {
		t.Errorf("parse ignored: %v regressed, want nothing", got)
	}
	for _, row := range r.Rows {
		if row.Name == "parse" {
			t.Errorf("ignored function still reported")
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "diff", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./diff -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./diff -update, then review):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestReportsGolden(t *testing.T) {
	r := compare(t, loadGlob(t, "../testdata/regress/base-*.pb.gz"), loadGlob(t, "../testdata/regress/head-*.pb.gz"))
	for _, c := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"regress.txt", func(b *bytes.Buffer) error { return r.Write(b, "text") }},
		{"regress.md", func(b *bytes.Buffer) error { return r.Write(b, "markdown") }},
		{"regress.json", func(b *bytes.Buffer) error { return r.Write(b, "json") }},
	} {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b.Bytes())
	}
}

// The false-discovery correction counts every sizeable function, not only
// those whose change looked large. Under AssumeNothing, with five runs a
// side the smallest one-sided Mann–Whitney p is 1/252 = 0.0040, so one
// function clearly slower among 3 sizeable ones (q = 3/252 = 0.012) is
// flagged, and among 15 (q = 15/252 = 0.060) it cannot be told from noise.
func TestFalseDiscoveryFamily(t *testing.T) {
	runs := func(others int, f0, fi int) []*profile.Profile {
		var ps []*profile.Profile
		for i := 0; i < 5; i++ {
			text := fmt.Sprintf("main;f0 %d\n", f0+i)
			for k := 1; k <= others; k++ {
				text += fmt.Sprintf("main;f%d %d\n", k, fi+i)
			}
			ps = append(ps, folded(t, text))
		}
		return ps
	}
	for _, c := range []struct {
		others int
		want   diff.Verdict
		q      float64
	}{{2, diff.Regressed, 3.0 / 252}, {14, diff.Unchanged, 15.0 / 252}} {
		r := compare(t, runs(c.others, 100, 100), runs(c.others, 130, 101), diff.WithMode(diff.Absolute),
			diff.WithAssumption(diff.AssumeNothing))
		f0 := rowOf(t, r, "f0")
		if f0.Verdict != c.want || math.Abs(f0.P-1.0/252) > 1e-9 || math.Abs(f0.Q-c.q) > 1e-9 {
			t.Errorf("f0 +30%% among %d functions slightly slower: %s p=%v q=%v, want %s p=1/252 q=%v",
				c.others, f0.Verdict, f0.P, f0.Q, c.want, c.q)
		}
	}
}

// Several runs of a function seen in a sample or two each: the runs
// separate completely, but a function this small varies at least by
// sampling (Poisson) whatever the calm functions' prior says, so 7 against
// 17 samples (p = 0.035 one-sided, q = 0.07 over the two functions) is no
// discovery; ten times the samples in the same pattern is.
func TestPooledSamplingNoise(t *testing.T) {
	runs := func(work int, tiny []int) []*profile.Profile {
		var ps []*profile.Profile
		for i, n := range tiny {
			ps = append(ps, folded(t, fmt.Sprintf("main;work %d\nmain;tiny %d\n", work+i, n)))
		}
		return ps
	}
	r := compare(t, runs(1000, []int{1, 2, 1, 2, 1}), runs(1000, []int{3, 3, 4, 3, 4}), diff.WithMode(diff.Absolute))
	tiny := rowOf(t, r, "tiny")
	if tiny.P >= 0.05 || tiny.Verdict != diff.Unchanged {
		t.Errorf("tiny 7 -> 17 samples over 5 runs: p=%v %s, want p < 0.05 from the runs and unchanged", tiny.P, tiny.Verdict)
	}
	// Ten times the samples, the same runs' pattern: regressed.
	r = compare(t, runs(10000, []int{10, 20, 10, 20, 10}), runs(10000, []int{30, 30, 40, 30, 40}), diff.WithMode(diff.Absolute))
	if v := rowOf(t, r, "tiny").Verdict; v != diff.Regressed {
		t.Errorf("tiny 70 -> 170 samples over 5 runs: %s, want regressed", v)
	}
}

// multinomial draws a folded profile of n samples over functions with the
// given shares (main;f0, main;f1, ...).
func multinomial(t testing.TB, r *rand.Rand, n int, shares []float64) *profile.Profile {
	stacks := make([]string, len(shares))
	for j := range stacks {
		stacks[j] = fmt.Sprintf("main;f%d", j)
	}
	return drawStacks(t, r, n, stacks, shares)
}

// TestAssumptions: twenty functions of 5% each, five runs a side of 2000
// samples, f0 50% slower in B. The default model learns the noise from all
// twenty functions and finds f0 nearly always, with false alarms in A/A
// comparisons below alpha and a false-discovery share near it; Welch's
// t-test (AssumeNormal), with only each function's own five runs, does
// almost as well here. Under AssumeNothing, Mann–Whitney's smallest
// one-sided p-value with five runs (1/252) times the twenty functions
// exceeds alpha: it can flag nothing, and the report says so. Seeded, so
// the counts are the same on every run.
func TestAssumptions(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	base := make([]float64, 20)
	for i := range base {
		base[i] = 0.05
	}
	slow := slices.Clone(base)
	slow[0] = 0.075
	for i := range slow {
		slow[i] /= 1.025
	}
	runs := func(shares []float64) []*profile.Profile {
		var ps []*profile.Profile
		for range 5 {
			ps = append(ps, multinomial(t, r, 2000, shares))
		}
		return ps
	}
	const comparisons = 200
	var found, others, falseAA, nothingAB, normalAB int
	nothing, normal := diff.WithAssumption(diff.AssumeNothing), diff.WithAssumption(diff.AssumeNormal)
	for range comparisons {
		a, a2, b := runs(base), runs(base), runs(slow)
		for _, row := range compare(t, a, b).Regressions() {
			if row.Name == "f0" {
				found++
			} else {
				others++
			}
		}
		if len(compare(t, a, a2).Regressions()) > 0 {
			falseAA++
		}
		if len(compare(t, a, b, nothing).Regressions()) > 0 {
			nothingAB++
		}
		for _, row := range compare(t, a, b, normal).Regressions() {
			if row.Name == "f0" {
				normalAB++
			}
		}
	}
	t.Logf("A/B: model found f0 %d times (and %d others), normal %d, nothing %d; model A/A false alarms %d; of %d", found, others, normalAB, nothingAB, falseAA, comparisons)
	if found < comparisons*9/10 {
		t.Errorf("the model found f0 in %d of %d A/B comparisons, want at least 90%%", found, comparisons)
	}
	// Under the null the false-discovery rate is the chance of any false
	// alarm, held at alpha; at 100 samples a function per run the log
	// scale's skew adds a little (5.25% in 400 draws of this test's model).
	alpha := diff.DefaultSettings().Alpha
	if float64(falseAA) > comparisons*alpha*1.25 {
		t.Errorf("a false regression in %d of %d A/A comparisons, want at most %.2g%%", falseAA, comparisons, 125*alpha)
	}
	if fdr := float64(others) / float64(others+found); fdr > 2*alpha {
		t.Errorf("%d of %d discoveries in A/B were false (%.1f%%), want about %.0f%% at most", others, others+found, 100*fdr, 100*alpha)
	}
	if nothingAB > comparisons/5 {
		t.Errorf("AssumeNothing flagged something in %d of %d A/B comparisons; with five runs and twenty functions it seldom can", nothingAB, comparisons)
	}
	if normalAB < comparisons*7/10 {
		t.Errorf("AssumeNormal flagged f0 in %d of %d A/B comparisons, want at least 70%%", normalAB, comparisons)
	}
	// When Mann–Whitney cannot flag a lone regression, the report says so;
	// the model and Welch's test are not so limited.
	const limit = "with 5 and 5 runs the Mann-Whitney test's smallest p-value is"
	a, b := runs(base), runs(slow)
	if r := compare(t, a, b, nothing); !hasWarning(r, limit) {
		t.Errorf("twenty functions, five runs a side, AssumeNothing: no warning of Mann-Whitney's limit: %q", r.Warnings)
	}
	for _, o := range []diff.Option{nil, normal} {
		if r := compare(t, a, b, o); hasWarning(r, limit) {
			t.Errorf("warns of Mann-Whitney's limit without AssumeNothing: %q", r.Warnings)
		}
	}
	if r := compare(t, runs([]float64{0.5, 0.3, 0.2}), runs([]float64{0.5, 0.3, 0.2}), nothing); hasWarning(r, limit) {
		t.Errorf("three functions: warns of Mann-Whitney's limit: %q", r.Warnings)
	}
}

// A function seen on one side only is new (or gone) when its samples could
// not all have fallen on that side by chance, adjusted with the other
// functions seen on one side only (here there are none). Worked by hand:
// with equal sampled time on both sides each sample of a function of
// unchanged rate lands on the head side with probability 1/2, so 4 samples
// all there have p = 1/16 = 0.0625 > 0.05 (not distinguishable from none:
// unchanged), 5 have p = 1/32 < 0.05 (new). Both are sizeable (≥ 0.5% of
// the profile).
func TestNewNeedsSamplesThatCouldNotBeChance(t *testing.T) {
	for _, c := range []struct {
		k    int
		want diff.Verdict
	}{{4, diff.Unchanged}, {5, diff.New}, {40, diff.New}} {
		base := folded(t, fmt.Sprintf("main;work %d\n", 400))
		head := folded(t, fmt.Sprintf("main;work %d\nmain;gcAssist %d\n", 400-c.k, c.k))
		r := compare(t, one(base), one(head), diff.WithHeadline(false))
		if got := rowOf(t, r, "gcAssist").Verdict; got != c.want {
			t.Errorf("%d samples in head only: %s, want %s", c.k, got, c.want)
		}
		// The same function gone from head reads the other way round.
		r = compare(t, one(head), one(base), diff.WithHeadline(false))
		want := c.want
		if want == diff.New {
			want = diff.Gone
		}
		if got := rowOf(t, r, "gcAssist").Verdict; got != want {
			t.Errorf("%d samples in base only: %s, want %s", c.k, got, want)
		}
	}
}
