package bench_test

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

func TestCompareBench(t *testing.T) {
	old, err := os.Open("../testdata/cli/old.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	cur, err := os.Open("../testdata/cli/new.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	r, err := bench.Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]diff.Verdict{}
	for _, row := range r.Rows {
		got[row.Name+" "+row.Unit] = row.Verdict
		if exact := row.Unit == "B/op" || row.Unit == "allocs/op"; exact != (row.Test == "exact") || !exact && row.Test != "mann-whitney" && row.Verdict != diff.New && row.Verdict != diff.Gone {
			t.Errorf("%s: test %s", row.Name, row.Test)
		}
	}
	if got["Parse-2 sec/op"] != diff.Regressed {
		t.Errorf("Parse 1000 -> 1300 ns/op: %v", got)
	}
	if got["Render-2 sec/op"] != diff.Unchanged {
		t.Errorf("Render unchanged: %v", got)
	}
	var b bytes.Buffer
	if err := r.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "regressed") || !strings.Contains(b.String(), "Parse-2") {
		t.Errorf("text report:\n%s", b.String())
	}
	if _, err := bench.Compare(strings.NewReader("not a benchmark\n"), strings.NewReader("")); err == nil {
		t.Error("input without results: no error")
	}

	// Assuming normal runs: Welch's t-test, the same verdicts here, and
	// the report says which test it used.
	old.Seek(0, io.SeekStart)
	cur.Seek(0, io.SeekStart)
	r, err = bench.Compare(old, cur, bench.WithAssumption(diff.AssumeNormal))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Test != "welch-t" && row.Test != "exact" {
			t.Errorf("AssumeNormal: %s %s: test %s", row.Name, row.Unit, row.Test)
		}
		if want := got[row.Name+" "+row.Unit]; row.Verdict != want {
			t.Errorf("AssumeNormal: %s %s: %s, want %s as with Mann-Whitney", row.Name, row.Unit, row.Verdict, want)
		}
	}
	b.Reset()
	if err := r.Write(&b, "text"); err != nil || !strings.Contains(b.String(), "Welch's t-test") {
		t.Errorf("AssumeNormal text report (%v):\n%s", err, b.String())
	}
}

// Throughput: higher is better, so a drop is the regression.
func TestCompareBenchThroughput(t *testing.T) {
	runs := func(v float64) string {
		var b strings.Builder
		for i := 0; i < 6; i++ {
			fmt.Fprintf(&b, "BenchmarkCopy-2 100 1000 ns/op %.1f MB/s\n", v+float64(i))
		}
		return b.String()
	}
	r, err := bench.Compare(strings.NewReader(runs(500)), strings.NewReader(runs(300)))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Unit == "B/s" && row.Verdict != diff.Regressed {
			t.Errorf("throughput 500 -> 300 MB/s: %s", row.Verdict)
		}
	}
}

// TestBenchAllocsExact: allocs/op and B/op are counts, judged without
// statistics: one run a side, 10 -> 11 allocs/op regressed; 1000 -> 1004
// B/op (0.4%, within the tolerance) unchanged; time, from one run, cannot
// be judged.
func TestBenchAllocsExact(t *testing.T) {
	base := "BenchmarkX-2 \t 1000\t 500 ns/op\t 1000 B/op\t 10 allocs/op\n"
	head := "BenchmarkX-2 \t 1000\t 900 ns/op\t 1004 B/op\t 11 allocs/op\n"
	rep, err := bench.Compare(strings.NewReader(base), strings.NewReader(head))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bench.Row{}
	for _, r := range rep.Rows {
		got[r.Unit] = r
	}
	if r := got["allocs/op"]; r.Verdict != diff.Regressed || r.Test != "exact" {
		t.Errorf("allocs/op 10 -> 11: %s (test %s), want regressed, exact", r.Verdict, r.Test)
	}
	if r := got["B/op"]; r.Verdict != diff.Unchanged || r.Test != "exact" {
		t.Errorf("B/op 1000 -> 1004: %s (test %s), want unchanged, exact", r.Verdict, r.Test)
	}
	if r := got["sec/op"]; r.Verdict != diff.Unchanged || r.Test == "exact" {
		t.Errorf("sec/op from one run: %s (test %s), want unchanged, statistical", r.Verdict, r.Test)
	}

	// Runs of a side that disagree (6 and 10 allocs/op: a pool refilled
	// after collections) are no exact count: judged statistically, with
	// a warning; two runs a side cannot be significant.
	base = "BenchmarkX-2 \t 1000\t 500 ns/op\t 6 allocs/op\nBenchmarkX-2 \t 1000\t 500 ns/op\t 6 allocs/op\n"
	head = "BenchmarkX-2 \t 1000\t 500 ns/op\t 9 allocs/op\nBenchmarkX-2 \t 1000\t 500 ns/op\t 10 allocs/op\n"
	if rep, err = bench.Compare(strings.NewReader(base), strings.NewReader(head)); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if r.Unit == "allocs/op" && (r.Test == "exact" || r.Verdict != diff.Unchanged || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "varies between runs (9 to 10)")) {
			t.Errorf("allocs/op 6,6 -> 9,10: %s, test %s, warnings %q; want unchanged, statistical, a warning", r.Verdict, r.Test, r.Warnings)
		}
	}
}

// A report of benchmarks has no flame graph, only the table.
func TestHTMLBench(t *testing.T) {
	old, err := os.ReadFile("../testdata/cli/old.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile("../testdata/cli/new.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := bench.Compare(bytes.NewReader(old), bytes.NewReader(cur))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `id="hb-data">null</script>`) || strings.Contains(page, `id="hb-canvas"`) {
		t.Error("bench report: want no flame graph")
	}
	if !strings.Contains(page, `<td>Parse-2</td>`) {
		t.Error("bench report lacks the regressed benchmark")
	}
	// Worded and valued as the text report: benchmark results, their own
	// units, every row shown (the function report's helpers said "1 of 6
	// functions regressed", showed 0.00% and hid five rows).
	var text bytes.Buffer
	if err := r.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	summary := strings.TrimSpace(text.String()[strings.LastIndex(strings.TrimSpace(text.String()), "\n")+1:])
	if !strings.HasPrefix(summary, "1 of 6 benchmark results regressed") || !strings.Contains(page, html.EscapeString(summary)) {
		t.Errorf("the page lacks the text report's summary %q", summary)
	}
	for _, want := range []string{"sec/op", "B/op", "<td>Render-2</td>", fmt.Sprintf("%.2f%%", 100*r.Regressions()[0].Relative)} {
		if !strings.Contains(page, want) {
			t.Errorf("bench page lacks %q", want)
		}
	}
	for _, bad := range []string{"functions", "share points", "not shown"} {
		if strings.Contains(page, bad) {
			t.Errorf("bench page says %q", bad)
		}
	}
}

// bench's options are its own type: none of diff's function options (a
// mode, a selection, a gate) can be passed to Compare, where it would mean
// nothing; the compiler refuses it.
func TestOptionsAreBenchs(t *testing.T) {
	benchOpt := reflect.TypeFor[bench.Option]()
	diffOpt := reflect.TypeFor[diff.Option]()
	if diffOpt.Implements(benchOpt) || reflect.TypeOf(diff.WithMode(diff.Absolute)).Implements(benchOpt) {
		t.Error("a diff.Option is a bench.Option")
	}
	if benchOpt.Implements(diffOpt) {
		t.Error("a bench.Option is a diff.Option")
	}
}

// TestCompareRefusesNonFinite: a value go test never prints (NaN, ±Inf)
// is refused naming the side, the benchmark and the value; a NaN used to
// hang the Mann-Whitney test (found by FuzzCompare).
func TestCompareRefusesNonFinite(t *testing.T) {
	for _, v := range []string{"NaN", "+Inf", "-Inf"} {
		done := make(chan error, 1)
		go func() {
			_, err := bench.Compare(strings.NewReader("BenchmarkX 10 5 ns/op\n"), strings.NewReader("BenchmarkX 10 7 ns/op\nBenchmarkX 10 "+v+" ns/op\n"))
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "head benchmarks: BenchmarkX:") || !strings.Contains(err.Error(), "/op is not a finite number") {
				t.Errorf("%s: error %v, want the head's BenchmarkX value refused", v, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Compare has not returned after 30s", v)
		}
	}
}
