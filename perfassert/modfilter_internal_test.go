package perfassert

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// countCapture is one process's exact capture of work iterations: self
// counts by function name.
func countCapture(t *testing.T, work float64, self map[string]int64) *profile.Profile {
	t.Helper()
	return testutil.CountProfile(work, self)
}

// TestJudgeCountsNothingJudged: counts of which no function is the
// module's (as a filter blind to the toolchain's escaped names saw
// gopkg.in/yaml.v3's) fail, naming the filter and the closest names, even
// where a function changed by 2.7%; a pass says how many of the module's
// functions it judged.
func TestJudgeCountsNothingJudged(t *testing.T) {
	mod := mainModule()
	if mod == "" {
		t.Skip("the test binary does not record its module")
	}
	other := map[string]int64{"gopkg.in/yaml%2ev3.yaml_parser_scan": 24_000, "runtime.mallocgc": 976_000}
	changed := map[string]int64{"gopkg.in/yaml%2ev3.yaml_parser_scan": 24_650, "runtime.mallocgc": 976_000}
	rt := &recT{}
	if judgeCounts(rt, "MatchBaseline", "base = b, head = current", capturedOf(countCapture(t, 10, other)), capturedOf(countCapture(t, 10, changed))) {
		t.Fatalf("passed having judged no function of %s: %q", mod, rt.logs)
	}
	if len(rt.errs) != 1 {
		t.Fatalf("errors: %q", rt.errs)
	}
	for _, want := range []string{"the functions of " + mod, "matched none of the 2 functions", "nothing was judged", "runtime.mallocgc"} {
		if !strings.Contains(rt.errs[0], want) {
			t.Errorf("failure %q does not say %q", rt.errs[0], want)
		}
	}

	own := map[string]int64{mod + "/perfassert.parse": 24_000, mod + "/perfassert_test.TestX.func1": 1000, "runtime.mallocgc": 975_000}
	rt = &recT{}
	if !judgeCounts(rt, "MatchBaseline", "base = b, head = current", capturedOf(countCapture(t, 10, own)), capturedOf(countCapture(t, 10, own))) {
		t.Fatalf("unchanged counts failed: %q", rt.errs)
	}
	if want := "no function's count changed, each counted exactly (2 functions of " + mod + " judged)"; len(rt.logs) != 1 || !strings.Contains(rt.logs[0], want) {
		t.Errorf("pass %q does not say %q", rt.logs, want)
	}
}

// TestReportNothingJudged: a sampled comparison that judged no function
// (none large enough, or none kept by diff.WithOnly) and not the
// program's time fails, saying why, where it passed.
func TestReportNothingJudged(t *testing.T) {
	tiny := &diff.Report{Settings: diff.DefaultSettings(), Base: diff.Side{Runs: 5, Samples: 100}, Head: diff.Side{Runs: 5, Samples: 100},
		Rows: []diff.Row{{Name: "example.com/m.tiny", Verdict: diff.Unchanged, Test: "sampling", P: 0.9, Q: 1}}}
	rt := &recT{}
	if reportReport(rt, "NoRegression", "base = baseline, head = current", "function", tiny) {
		t.Fatalf("passed having judged nothing: %q", rt.logs)
	}
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "judged no function, and nothing judged is not a pass: each of the 1 compared is too small") {
		t.Errorf("failure %q", rt.errs)
	}

	none := &diff.Report{Settings: diff.DefaultSettings(), Base: diff.Side{Runs: 5, Samples: 100}, Head: diff.Side{Runs: 5, Samples: 100}}
	none.Settings.Only = regexp.MustCompile(`^example\.com/other\.`)
	rt = &recT{}
	if reportReport(rt, "MatchBaseline", "base = b, head = current", "function", none) {
		t.Fatalf("passed having kept no function: %q", rt.logs)
	}
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], `the functions matching ^example\.com/other\. matched none of the 0 functions measured, so nothing was judged`) {
		t.Errorf("failure %q", rt.errs)
	}

	// The headline judged is a judgement: it passes, saying so.
	head := &diff.Report{Settings: diff.DefaultSettings(), Base: diff.Side{Runs: 5, Samples: 100}, Head: diff.Side{Runs: 5, Samples: 100},
		Headline: diff.Headline{Judged: true, Per: "iteration", Verdict: diff.Unchanged}}
	rt = &recT{}
	if !reportReport(rt, "NoRegression", "base = baseline, head = current", "function", head) {
		t.Errorf("failed with the program's time judged unchanged: %q", rt.errs)
	}
}
