package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

// bench --assume model is the documented default: benchmarks give no
// family of functions to learn noise from, so the model cannot be used.
// The report must say so, and judge as it says (Mann–Whitney U, the test
// of --assume nothing, with the same figures); --assume normal must use
// Welch's t-test, which it names.
func TestBenchAssumptionUsedOrSaid(t *testing.T) {
	compare := func(opts ...bench.Option) (*bench.Report, string) {
		rep, err := bench.Compare(openBench(t, "../testdata/benchstat/base1.txt"), openBench(t, "../testdata/benchstat/head.txt"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := rep.Write(&b, "text"); err != nil {
			t.Fatal(err)
		}
		return rep, b.String()
	}
	model, modelText := compare() // the default
	if model.Settings.Assume != diff.AssumeModel {
		t.Fatalf("default assumption %q, want model", model.Settings.Assume)
	}
	nothing, _ := compare(bench.WithAssumption(diff.AssumeNothing))
	normal, normalText := compare(bench.WithAssumption(diff.AssumeNormal))
	if !strings.Contains(modelText, "Mann-Whitney U as benchstat (no noise model is learned across benchmarks)") {
		t.Errorf("--assume model does not say which test it used instead:\n%s", modelText)
	}
	if !strings.Contains(normalText, "Welch's t-test") {
		t.Errorf("--assume normal does not name its test:\n%s", normalText)
	}
	if len(model.Rows) != len(nothing.Rows) || len(model.Rows) != len(normal.Rows) {
		t.Fatalf("rows %d, %d, %d", len(model.Rows), len(nothing.Rows), len(normal.Rows))
	}
	differ := 0
	for i, m := range model.Rows {
		n, w := nothing.Rows[i], normal.Rows[i]
		if m.Test != n.Test || m.P != n.P || m.Verdict != n.Verdict {
			t.Errorf("%s %s: model %s p=%v %s, nothing %s p=%v %s: model must judge as it says", m.Name, m.Unit, m.Test, m.P, m.Verdict, n.Test, n.P, n.Verdict)
		}
		if m.Test == "exact" && w.Test == "exact" && (m.Unit == "B/op" || m.Unit == "allocs/op") {
			// Allocations are exact metrics, judged without a test
			// whatever the assumption (when each side's runs agree).
			continue
		}
		if m.Test != "none" && m.Test != "mann-whitney" {
			t.Errorf("%s %s: model judged by %q, its report says Mann-Whitney U", m.Name, m.Unit, m.Test)
		}
		if w.Test != "none" && w.Test != "welch-t" {
			t.Errorf("%s %s: normal judged by %q", m.Name, m.Unit, w.Test)
		}
		if w.P != m.P {
			differ++
		}
	}
	if differ == 0 {
		t.Error("--assume normal gave every p-value of --assume model: the choice is not used")
	}
}
