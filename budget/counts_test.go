package budget

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

// countedBaseline is a real counted baseline: five processes of one
// iteration of examples/capture.Parse each (Parse's self count 780,367 an
// iteration, 3.77% of the program's).
const countedBaseline = "../examples/baseline/testdata/go1.26/parse.instructions.pb.gz"

const parseFunc = "github.com/hotbudget/hotbudget/examples/capture.Parse"

// scaled is the counted baseline with fn's self count times scale in
// every process.
func scaled(t *testing.T, fn string, scale float64) *profile.Profile {
	t.Helper()
	p, err := loaders.Load(countedBaseline)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == fn {
			s.Value[0] = int64(float64(s.Value[0]) * scale)
		}
	}
	return p
}

// TestCountRegression: max_regression on exact counts judges each
// function's self count per iteration as diff.CompareCounts does, never its
// share with statistics (which called a 2% slower Parse unchanged): Parse
// made 2% slower fails a 1% limit, passes a 5% one (regressed, within
// it), and an unchanged function passes; a pattern names the worst.
func TestCountRegression(t *testing.T) {
	base, err := loaders.Load(countedBaseline)
	if err != nil {
		t.Fatal(err)
	}
	head := scaled(t, parseFunc, 1.02)
	b := mustParse(t, "c.yaml", `version: 1
rules:
  - function: `+parseFunc+`
    max_regression: 1%
  - function: `+parseFunc+`
    max_regression: 5%
  - function: github.com/hotbudget/hotbudget/examples/capture.normalizeKey
    max_regression: 1%
  - match: 'examples/capture\.'
    max_regression: 1%
`)
	res, err := Check(b, []*profile.Profile{head}, []*profile.Profile{base})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pass     bool
		function string
		verdict  diff.Verdict
		message  string
	}{
		{false, parseFunc, diff.Regressed, parseFunc + ": self instructions per iteration 780367 -> 795974 (+2.00%, counted exactly; allowed ±3902) regressed by more than 1.00%"},
		{true, parseFunc, diff.Regressed, "(+2.00%, counted exactly; allowed ±3902) regressed, limit +5.00%"},
		{true, "github.com/hotbudget/hotbudget/examples/capture.normalizeKey", diff.Unchanged, "(+0.00%, counted exactly) unchanged, limit +1.00%"},
		{false, parseFunc, diff.Regressed, "(worst of 3 matching /examples/capture\\./)"},
	}
	if len(res.Checks) != len(want) {
		t.Fatalf("%d checks, want %d", len(res.Checks), len(want))
	}
	for i, w := range want {
		c := res.Checks[i]
		if c.Pass != w.pass || c.Function != w.function || c.Verdict != w.verdict || !strings.Contains(c.Message, w.message) || c.Unit != "relative" {
			t.Errorf("check %d: pass %v, %s, %q, %s: %s\nwant pass %v, %s, %q, message with %q", i, c.Pass, c.Function, c.Verdict, c.Unit, c.Message, w.pass, w.function, w.verdict, w.message)
		}
	}
	if got := res.Checks[0].Got; got < 0.0199 || got > 0.0201 {
		t.Errorf("got %v, want +2%%", got)
	}
	// Counts against samples: an error, not a verdict.
	cpu, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(b, []*profile.Profile{cpu}, []*profile.Profile{base}); err == nil || !strings.Contains(err.Error(), "compare counts with counts") {
		t.Errorf("counts against a CPU profile: %v", err)
	}
}

// TestCountRegressionAnyEvent: what is counted is told by the exact mark
// and the unit, not the event's name: a capture of counted cycles is
// judged as counts too; a count below zero on a side is never judged.
func TestCountRegressionAnyEvent(t *testing.T) {
	mk := func(f, neg int64) *profile.Profile {
		p := testutil.CountProfile(10, map[string]int64{"m.f": f, "runtime.sysmon": neg, "runtime.main": 1_000_000})
		p.SampleType[0].Type, p.PeriodType.Type = "cycles", "cycles"
		return p
	}
	b := mustParse(t, "c.yaml", "version: 1\nrules:\n  - function: m.f\n    max_regression: 1%\n  - function: runtime.sysmon\n    max_regression: 1%\n")
	res, err := Check(b, []*profile.Profile{mk(103_000, 5_000)}, []*profile.Profile{mk(100_000, -4_000)})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; c.Pass || c.Verdict != diff.Regressed || !strings.Contains(c.Message, "self cycles per iteration 10000 -> 10300 (+3.00%") {
		t.Errorf("m.f: pass %v, %s: %s", c.Pass, c.Verdict, c.Message)
	}
	if c := res.Checks[1]; !c.Missing || !c.Pass || !strings.Contains(c.Message, "runtime.sysmon below zero on a side, not judged") {
		t.Errorf("runtime.sysmon: missing %v, pass %v: %s", c.Missing, c.Pass, c.Message)
	}
}
