package bench_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"golang.org/x/perf/benchunit"
)

func openBench(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// benchstatRow is one comparison line of benchstat's text output.
type benchstatRow struct {
	base, head             string // medians as benchstat prints them, e.g. "49.58µ"
	baseSpread, headSpread string // its ±, e.g. "80%"
	delta                  string // "+77.17%", "~" or "?"
	p                      float64
	changed                bool // a percentage, not "~"
}

// benchstatGeomean is one geomean line: base and head ("" when benchstat
// could not compute them) and the change ("?" likewise).
type benchstatGeomean struct{ base, head, delta string }

// readBenchstat reads benchstat's default text output: "pkg: " headers,
// a unit line per table and rows "Parse-2  49.58µ ± 80%  87.85µ ± 48%
// +77.17% (p=0.009 n=10)", and geomean rows. Keys are "pkg name unit"
// and "pkg unit".
func readBenchstat(t *testing.T, path string) (map[string]benchstatRow, map[string]benchstatGeomean) {
	t.Helper()
	f := openBench(t, path)
	rowRE := regexp.MustCompile(`^(\S+)\s+(\S+) ±\s*(\S+)\s+(\S+) ±\s*(\S+)\s+(~|\?|[+-][0-9.]+%) \(p=([0-9.]+) n=\S+\)`)
	unitRE := regexp.MustCompile(`│\s+(\S+)\s+│\s+(\S+)\s+vs base`)
	deltaRE := regexp.MustCompile(`^(\?|[+-][0-9.]+%)$`)
	out := map[string]benchstatRow{}
	geo := map[string]benchstatGeomean{}
	pkg, unit := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
		}
		if m := unitRE.FindStringSubmatch(line); m != nil {
			unit = m[1]
		}
		if m := rowRE.FindStringSubmatch(line); m != nil {
			p, err := strconv.ParseFloat(m[7], 64)
			if err != nil {
				t.Fatal(err)
			}
			out[pkg+" "+m[1]+" "+unit] = benchstatRow{m[2], m[4], m[3], m[5], m[6], p, m[6] != "~"}
		}
		if rest, ok := strings.CutPrefix(line, "geomean "); ok {
			// Footnote marks (superscript digits) are not values.
			rest = strings.Map(func(r rune) rune {
				if strings.ContainsRune("⁰¹²³⁴⁵⁶⁷⁸⁹", r) {
					return ' '
				}
				return r
			}, rest)
			var g benchstatGeomean
			fields := strings.Fields(rest)
			if n := len(fields); n > 0 && deltaRE.MatchString(fields[n-1]) {
				g.delta, fields = fields[n-1], fields[:n-1]
			}
			if len(fields) == 2 {
				g.base, g.head = fields[0], fields[1]
			}
			geo[pkg+" "+unit] = g
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no benchstat rows", path)
	}
	return out, geo
}

// TestCompareBenchPackages reads real `go test ./... -bench` output of a
// module with two packages, both with BenchmarkParse, where the head
// revision made kv.Parse about 50% slower (testdata/benchpkg). Only kv's
// benchmark may be flagged, and our medians and p-values must be
// benchstat's (benchstat.txt, its output on the same files).
func TestCompareBenchPackages(t *testing.T) {
	rep, err := bench.Compare(openBench(t, "../testdata/benchpkg/base.txt"), openBench(t, "../testdata/benchpkg/head.txt"))
	if err != nil {
		t.Fatal(err)
	}
	regs := rep.Regressions()
	if len(regs) != 1 || regs[0].Config["pkg"] != "example.com/parsers/kv" || regs[0].Name != "Parse-2" || regs[0].Unit != "sec/op" {
		t.Fatalf("regressions %+v, want kv's Parse-2 sec/op alone", regs)
	}
	want, _ := readBenchstat(t, "../testdata/benchpkg/benchstat.txt")
	seen := 0
	for _, row := range rep.Rows {
		k := row.Config["pkg"] + " " + row.Name + " " + row.Unit
		b, ok := want[k]
		if !ok {
			t.Errorf("%s: not in benchstat's output", k)
			continue
		}
		seen++
		cls := benchunit.ClassOf(row.Unit)
		if got := benchunit.Scale(row.Base.Median, cls); got != b.base {
			t.Errorf("%s: base median %s, benchstat %s", k, got, b.base)
		}
		if got := benchunit.Scale(row.Head.Median, cls); got != b.head {
			t.Errorf("%s: head median %s, benchstat %s", k, got, b.head)
		}
		if got := strconv.FormatFloat(row.P, 'f', 3, 64); got != strconv.FormatFloat(b.p, 'f', 3, 64) {
			t.Errorf("%s: p=%s, benchstat p=%.3f", k, got, b.p)
		}
		// With one package's two units of zeros, benchstat's p and ours
		// agree; our false-discovery adjustment can only remove verdicts.
		if row.Verdict == diff.Regressed && !b.changed {
			t.Errorf("%s: regressed, but benchstat sees no change", k)
		}
	}
	if seen != len(want) {
		t.Errorf("compared %d of benchstat's %d rows", seen, len(want))
	}
	for _, row := range rep.Rows {
		if len(row.Config) == 0 || row.Config["goos"] != "linux" || row.Config["cpu"] == "" {
			t.Errorf("%s: configuration %v lacks goos or cpu", row.Name, row.Config)
		}
	}

	var text bytes.Buffer
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"goos: linux\n", "pkg  ", "example.com/parsers/ini  Parse-2",
		"1 of 6 benchmark results regressed: Parse-2 sec/op (example.com/parsers/kv)\n"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	if strings.Contains(text.String(), "function") {
		t.Errorf("text report speaks of functions:\n%s", text.String())
	}
	var md bytes.Buffer
	if err := rep.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### ❌ hotbudget bench: 1 of 6 benchmark results regressed: Parse-2 sec/op (example.com/parsers/kv)",
		"| pkg | benchmark | base | head |", "| `example.com/parsers/kv` | `Parse-2` |", "5 unchanged benchmark results"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("Markdown report lacks %q:\n%s", s, md.String())
		}
	}
	if strings.Contains(md.String(), "function") || strings.Contains(md.String(), "hotbudget diff") {
		t.Errorf("Markdown report words benchmarks as functions:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema     string
		Regressed  int
		Benchmarks []struct {
			Name, Package, Unit, Verdict string
			Config                       map[string]string
			Base                         struct{ Median float64 }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != "hotbudget.bench/v2" || got.Regressed != 1 || len(got.Benchmarks) != 6 {
		t.Fatalf("JSON: %s", js.String())
	}
	if b := got.Benchmarks[0]; b.Package != "example.com/parsers/kv" || b.Verdict != "regressed" || b.Unit != "sec/op" ||
		b.Config["goarch"] != "amd64" || b.Base.Median != regs[0].Base.Median {
		t.Errorf("JSON's first benchmark %+v, want kv's regression", b)
	}
}

// benchOutput is `go test -bench` output for one package and cpu with
// the given ns/op values of BenchmarkParse.
func benchOutput(pkg, cpu string, nsPerOp ...int) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: " + pkg + "\ncpu: " + cpu + "\n")
	for _, v := range nsPerOp {
		b.WriteString("BenchmarkParse-2   \t    1000\t  " + strconv.Itoa(v) + " ns/op\n")
	}
	return b.String() + "PASS\n"
}

// Before benchmarks were told apart by package, a 50% regression in one of
// two packages was pooled with the other's unchanged benchmark of the same
// name and not flagged.
func TestCompareBenchSameNameTwoPackages(t *testing.T) {
	base := benchOutput("example.com/a", "x", 100, 101, 99, 100, 102) + benchOutput("example.com/b", "x", 100, 98, 101, 100, 99)
	head := benchOutput("example.com/a", "x", 150, 152, 149, 151, 150) + benchOutput("example.com/b", "x", 100, 101, 99, 100, 98)
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows, want one per package", len(rep.Rows))
	}
	for _, row := range rep.Rows {
		want := diff.Unchanged
		if row.Config["pkg"] == "example.com/a" {
			want = diff.Regressed
		}
		if row.Verdict != want {
			t.Errorf("%s in %s: %s (%+.1f%%, p=%.3g), want %s", row.Name, row.Config["pkg"], row.Verdict, 100*row.Relative, row.P, want)
		}
	}
}

// Benchmarks run on different machines are different configurations, as
// in benchstat: nothing is compared, a warning says which key differs,
// and ignoring it compares them.
func TestCompareBenchIgnore(t *testing.T) {
	// Six runs a side: the medians' confidence intervals are finite.
	base := benchOutput("example.com/a", "laptop", 100, 101, 99, 100, 102, 100)
	head := benchOutput("example.com/a", "ci runner", 150, 152, 149, 151, 150, 151)
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Counts()
	if c[diff.New] != 1 || c[diff.Gone] != 1 || c[diff.Regressed] != 0 {
		t.Errorf("verdicts %v, want one new and one gone", c)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], `cpu "laptop" in base, "ci runner" in head`) ||
		!strings.Contains(rep.Warnings[0], `bench.WithIgnore("cpu")`) {
		t.Errorf("warnings %q, want one naming cpu and the option that ignores it", rep.Warnings)
	}
	rep, err = bench.Compare(strings.NewReader(base), strings.NewReader(head), bench.WithIgnore("cpu"))
	if err != nil {
		t.Fatal(err)
	}
	if regs := rep.Regressions(); len(regs) != 1 || regs[0].Config["cpu"] != "" || regs[0].Config["pkg"] != "example.com/a" {
		t.Errorf("with cpu ignored: regressions %+v, want Parse-2 of example.com/a without cpu", regs)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("with cpu ignored: warnings %q", rep.Warnings)
	}
	// A benchmark moved to another package is not a configuration mismatch.
	rep, err = bench.Compare(strings.NewReader(base), strings.NewReader(benchOutput("example.com/b", "laptop", 100, 101, 99, 100, 102, 100)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("a benchmark in another package: warnings %q", rep.Warnings)
	}
	// The GOMAXPROCS suffix is a sub-name key: Parse-2 and Parse-4 are
	// compared when /gomaxprocs is ignored.
	four := strings.ReplaceAll(base, "Parse-2", "Parse-4")
	rep, err = bench.Compare(strings.NewReader(base), strings.NewReader(four), bench.WithIgnore("/gomaxprocs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Verdict != diff.Unchanged || rep.Rows[0].Name != "Parse" {
		t.Errorf("with /gomaxprocs ignored: %+v, want one unchanged row Parse", rep.Rows)
	}
	for _, bad := range []string{"Cpu", ".config", "cpu@(a)", "a b", ""} {
		if _, err := bench.Compare(strings.NewReader(base), strings.NewReader(base), bench.WithIgnore(bad)); err == nil ||
			!strings.Contains(err.Error(), "cannot ignore") {
			t.Errorf("ignoring %q: %v, want an error", bad, err)
		}
	}
}

// Two runs a side cannot flag a benchmark: the report says so once, with
// how many results it held for, and the row keeps benchmath's warning.
func TestCompareBenchTooFewRuns(t *testing.T) {
	const base = "pkg: example.com/m\nBenchmarkA-2 100 1000 ns/op\nBenchmarkA-2 100 1010 ns/op\nBenchmarkB-2 100 500 ns/op\nBenchmarkB-2 100 505 ns/op\n"
	head := strings.NewReplacer(" 1000 ns", " 3000 ns", " 1010 ns", " 3010 ns").Replace(base)
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, w := range rep.Warnings {
		if strings.Contains(w, "with 2 and 2 runs") && strings.Contains(w, "need >= 4 runs a side (2 results)") {
			found++
		}
	}
	if found != 1 {
		t.Errorf("report warnings %q, want the too-few-runs warning once for 2 results", rep.Warnings)
	}
	for _, row := range rep.Rows {
		if len(row.Warnings) == 0 || !strings.Contains(row.Warnings[0], "need >= 4 samples") {
			t.Errorf("%s: warnings %q, want benchmath's", row.Name, row.Warnings)
		}
	}
}
