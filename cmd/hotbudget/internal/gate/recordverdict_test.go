package gate

import (
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

// A benchmark whose functions held their shares while its whole program's
// time per op was judged regressed (the headline): the summary calls it
// regressed, so the gate fails, in every format, and the verdict says why.
func TestRecordVerdictHeadlineFails(t *testing.T) {
	other := &diff.Report{Name: "example.com/m BenchmarkOther", Settings: diff.DefaultSettings(),
		Headline: diff.Headline{Judged: true, Per: "op", Verdict: diff.Regressed, Relative: 0.138, P: 0.001, Test: "welch-t"},
		Rows:     []diff.Row{{Name: "example.com/m.f", Verdict: diff.Unchanged, Test: "sampling", P: 0.5, Q: 0.9}}}
	quiet := &diff.Report{Name: "example.com/m BenchmarkQuiet", Settings: diff.DefaultSettings(),
		Rows: []diff.Row{{Name: "example.com/m.g", Verdict: diff.Unchanged, Test: "sampling", P: 0.5, Q: 0.9}}}
	funcs := []*diff.Report{quiet, other}
	if !other.Failed() {
		t.Fatal("diff.Report.Failed does not count a regressed headline")
	}
	res := &Measurement{baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "."}}
	for _, format := range []string{"text", "markdown", "json"} {
		out, code := reportOf(t, res, funcs, &bench.Report{}, nil, format, false)
		if code != exitFail {
			t.Errorf("%s: exit %d for a report that says a benchmark regressed, want %d\n%s", format, code, exitFail, out)
		}
		if !strings.Contains(out, "the program's time: BenchmarkOther +13.8% per op") {
			t.Errorf("%s: the verdict does not name the regressed time per op:\n%s", format, out)
		}
	}
}

// What is shown and not gated is never worded regressed: a function
// outside the gate that changed significantly and a benchmark's sec/op
// against a base from the history (ungateMeasuredTime) leave the gate
// passing, and no line naming them says "regressed".
func TestRecordShownNotRegressed(t *testing.T) {
	r := &diff.Report{Name: "example.com/m BenchmarkX", Settings: diff.DefaultSettings(),
		Rows: []diff.Row{{Name: "runtime.mallocgc", Verdict: diff.Unchanged, Ungated: true, Relative: 0.3, Test: "sampling", P: 0.001, Q: 0.002,
			NearMiss: "+30%: significant, but not gated"}}}
	benches := &bench.Report{Rows: []bench.Row{{Name: "BenchmarkX-2", Unit: "sec/op", Verdict: diff.Regressed, Relative: 0.138, P: 0.001, Q: 0.001, Test: "mann-whitney"}}}
	res := &Measurement{baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "."}}
	res.timeShown = ungateMeasuredTime(benches)
	for _, format := range []string{"text", "markdown"} {
		for _, full := range []bool{false, true} {
			out, code := reportOf(t, res, []*diff.Report{r}, benches, nil, format, full)
			if code != exitOK {
				t.Errorf("%s (full %v): exit %d, want %d\n%s", format, full, code, exitOK, out)
			}
			for _, line := range strings.Split(out, "\n") {
				if (strings.Contains(line, "mallocgc") || strings.Contains(line, "sec/op")) && strings.Contains(strings.ToLower(line), "regress") {
					t.Errorf("%s (full %v): a line of what is shown, not gated, says regressed: %q", format, full, line)
				}
			}
			if !strings.Contains(out, "mallocgc") || !strings.Contains(out, "sec/op") {
				t.Errorf("%s (full %v): what is shown is not shown:\n%s", format, full, out)
			}
		}
	}
}
