package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"golang.org/x/perf/benchunit"
)

// TestBenchAgreesWithBenchstat compares every figure of five real
// comparisons of `go test -bench` outputs with benchstat's on the same
// files (testdata/benchstat and testdata/benchpkg, benchstat's output kept
// beside them): medians scaled as benchstat scales a row, the ± spread,
// the change with its sign (throughput that fell is -86.14% and a
// regression), the p-value and the geomean rows. The text, Markdown and
// JSON reports carry the same figures.
func TestBenchAgreesWithBenchstat(t *testing.T) {
	cases := []struct{ base, head, benchstat string }{
		{"benchstat/base1.txt", "benchstat/base2.txt", "benchstat/benchstat-aa.txt"},
		{"benchstat/base1.txt", "benchstat/head.txt", "benchstat/benchstat-ab.txt"},
		{"benchstat/head.txt", "benchstat/base1.txt", "benchstat/benchstat-ba.txt"},
		{"benchstat/base1.txt", "benchstat/head-subset.txt", "benchstat/benchstat-subset.txt"},
		{"benchpkg/base.txt", "benchpkg/head.txt", "benchpkg/benchstat.txt"},
	}
	units := map[string]bool{}
	for _, c := range cases {
		t.Run(c.benchstat, func(t *testing.T) {
			rep, err := bench.Compare(openBench(t, "../testdata/"+c.base), openBench(t, "../testdata/"+c.head))
			if err != nil {
				t.Fatal(err)
			}
			want, geo := readBenchstat(t, "../testdata/"+c.benchstat)
			var text, md, js bytes.Buffer
			if err := rep.Write(&text, "text"); err != nil {
				t.Fatal(err)
			}
			if err := rep.Write(&md, "markdown"); err != nil {
				t.Fatal(err)
			}
			if err := rep.Write(&js, "json"); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Benchmarks []struct {
					Name, Package, Unit, Better, Verdict string
					Relative                             float64
					Base, Head                           struct{ Spread string }
				}
				Geomeans []struct {
					Unit     string
					Relative float64
					RatioOK  bool `json:"ratio_ok"`
				}
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			seen := 0
			for i, row := range rep.Rows {
				k := row.Config["pkg"] + " " + row.Name + " " + row.Unit
				b, ok := want[k]
				if !ok {
					if row.Verdict != diff.New && row.Verdict != diff.Gone {
						t.Errorf("%s: not in benchstat's output", k)
					}
					continue
				}
				seen++
				units[row.Unit] = true
				sc := benchunit.CommonScale([]float64{row.Base.Median, row.Head.Median}, benchunit.ClassOf(row.Unit))
				if got := sc.Format(row.Base.Median); got != b.base {
					t.Errorf("%s: base median %s, benchstat %s", k, got, b.base)
				}
				if got := sc.Format(row.Head.Median); got != b.head {
					t.Errorf("%s: head median %s, benchstat %s", k, got, b.head)
				}
				if row.Test == "exact" {
					// B/op and allocs/op are counts: judged without a
					// p-value (exactBenchVerdict), where benchstat tests
					// them as measurements.
					if row.Unit != "B/op" && row.Unit != "allocs/op" {
						t.Errorf("%s: judged exactly, but it is a measurement", k)
					}
				} else if got := strconv.FormatFloat(row.P, 'f', 3, 64); got != strconv.FormatFloat(b.p, 'f', 3, 64) {
					t.Errorf("%s: p=%s, benchstat p=%.3f", k, got, b.p)
				}
				// benchstat prints the change only where it is significant.
				change := fmt.Sprintf("%+.2f%%", 100*row.Relative)
				if row.Base.Median == 0 {
					change = "?"
				}
				if b.changed && change != b.delta {
					t.Errorf("%s: change %s, benchstat %s", k, change, b.delta)
				}
				if row.Verdict == diff.Regressed && !b.changed {
					t.Errorf("%s: regressed, but benchstat sees no change", k)
				}
				// A regression is a change for the worse: throughput down.
				if row.Verdict == diff.Regressed || row.Verdict == diff.Improved {
					worse := row.Relative > 0 || row.Base.Median == 0
					if row.HigherIsBetter {
						worse = row.Relative < 0
					}
					if worse != (row.Verdict == diff.Regressed) {
						t.Errorf("%s: %s for a change of %s (higher is better: %v)", k, row.Verdict, change, row.HigherIsBetter)
					}
				}
				j := doc.Benchmarks[i]
				if j.Name != row.Name || j.Unit != row.Unit || j.Base.Spread != b.baseSpread || j.Head.Spread != b.headSpread ||
					(b.changed && b.delta != "?" && fmt.Sprintf("%+.2f%%", 100*j.Relative) != b.delta) {
					t.Errorf("%s: JSON %+v, benchstat %+v", k, j, b)
				}
				if (j.Better == "higher") != strings.HasSuffix(row.Unit, "/s") {
					t.Errorf("%s: JSON better=%q", k, j.Better)
				}
				cells := []string{b.base + " " + row.Unit + " ± " + b.baseSpread, b.head + " " + row.Unit + " ± " + b.headSpread}
				for _, cell := range cells {
					if !strings.Contains(text.String(), cell) {
						t.Errorf("%s: the text report lacks benchstat's %q:\n%s", k, cell, text.String())
					}
					if !strings.Contains(md.String(), cell) {
						t.Errorf("%s: the Markdown report lacks benchstat's %q:\n%s", k, cell, md.String())
					}
				}
			}
			if seen != len(want) {
				t.Errorf("compared %d of benchstat's %d rows", seen, len(want))
			}
			// Geomeans: benchstat prints one for each table of two or more
			// benchmarks.
			if len(rep.Geomeans) != len(geo) {
				t.Errorf("%d geomeans, benchstat %d", len(rep.Geomeans), len(geo))
			}
			for gi, g := range rep.Geomeans {
				k := g.Config["pkg"] + " " + g.Unit
				b, ok := geo[k]
				if !ok {
					t.Errorf("geomean %s: not in benchstat's output", k)
					continue
				}
				cls := benchunit.ClassOf(g.Unit)
				if b.base != "" && (benchunit.Scale(g.Base, cls) != b.base || benchunit.Scale(g.Head, cls) != b.head) {
					t.Errorf("geomean %s: %s -> %s, benchstat %s -> %s", k, benchunit.Scale(g.Base, cls), benchunit.Scale(g.Head, cls), b.base, b.head)
				}
				delta := "?"
				if g.RatioOK {
					delta = fmt.Sprintf("%+.2f%%", 100*g.Relative)
				}
				if delta != b.delta {
					t.Errorf("geomean %s: change %s, benchstat %s", k, delta, b.delta)
				}
				if jg := doc.Geomeans[gi]; jg.Unit != g.Unit || jg.RatioOK != g.RatioOK || fmt.Sprintf("%+.2f%%", 100*jg.Relative) != fmt.Sprintf("%+.2f%%", 100*g.Relative) {
					t.Errorf("geomean %s: JSON %+v", k, jg)
				}
				if g.RatioOK && !strings.Contains(text.String(), delta) {
					t.Errorf("geomean %s: the text report lacks %s", k, delta)
				}
			}
		})
	}
	for _, u := range []string{"sec/op", "B/s", "B/op", "allocs/op"} {
		if !units[u] {
			t.Errorf("no %s compared", u)
		}
	}
}
