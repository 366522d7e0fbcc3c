package perfassert_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/perfassert"
)

// TestNoGreenByAbsence rebuilds the probes against the comparisons of
// tests: MatchBaseline passed against a baseline whose total was negative,
// and a head with nothing in it had no function that regressed. Each now
// fails, naming the file or side and the selection.
func TestNoGreenByAbsence(t *testing.T) {
	t.Setenv(perfassert.UpdateEnv, "")
	dir := t.TempDir()
	ok := testutil.SevenFuncs("main", 500e6)
	tests := []struct {
		name  string
		check func(perfassert.TestingT) bool
		want  []string
	}{
		{"MatchBaseline, a negative-total baseline", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "negative.pb.gz", testutil.SevenFuncs("main", -3000e6))
			return perfassert.MatchBaseline(ft, path, ok)
		}, []string{"perfassert.MatchBaseline: reading baseline: ", "negative.pb.gz: pprof: sample 0 has a negative samples/count value, -300"}},
		{"MatchBaseline, a baseline whose values overflow", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "overflow.pb.gz", testutil.TimeProfile(
				testutil.Sample{Stack: []string{"main.main", "main.f0"}, Nanos: 1 << 62},
				testutil.Sample{Stack: []string{"main.main", "main.f1"}, Nanos: 1 << 62}))
			return perfassert.MatchBaseline(ft, path, ok)
		}, []string{"overflow.pb.gz: pprof: sample 1: the cpu/nanoseconds values add up to more than", "would overflow"}},
		{"MatchBaseline, an empty baseline", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "empty.pb.gz", testutil.TimeProfile())
			return perfassert.MatchBaseline(ft, path, ok)
		}, []string{"perfassert.MatchBaseline: base: the profile has no samples (base = ", "empty.pb.gz, head = current)"}},
		{"MatchBaseline, an empty current profile", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "ok.pb.gz", ok)
			return perfassert.MatchBaseline(ft, path, testutil.TimeProfile())
		}, []string{"perfassert.MatchBaseline: head: the profile has no samples (base = ", "ok.pb.gz, head = current)"}},
		{"MatchBaseline, a negative current profile", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "ok.pb.gz", ok)
			return perfassert.MatchBaseline(ft, path, testutil.SevenFuncs("main", -300e6))
		}, []string{"perfassert.MatchBaseline: current: sample 0 has a negative samples/count value, -30"}},
		{"NoRegressionRuns, a nil head", func(ft perfassert.TestingT) bool {
			return perfassert.NoRegressionRuns(ft, []*profile.Profile{ok}, []*profile.Profile{ok, nil})
		}, []string{"perfassert.NoRegressionRuns: current run 2 is nil"}},
		{"MatchBaseline, the thread renamed", func(ft perfassert.TestingT) bool {
			path := testutil.WriteProfile(t, dir, "main.pb.gz", ok)
			return perfassert.MatchBaseline(ft, path, testutil.SevenFuncs("worker", 900e6), diff.WithSelection(analysis.Selection{Threads: []string{"main"}}))
		}, []string{`perfassert.MatchBaseline: head: the selection (thread "main") leaves no time; the profile has thread worker (base = `}},
		{"NoRegression, an empty head", func(ft perfassert.TestingT) bool {
			return perfassert.NoRegression(ft, ok, testutil.TimeProfile())
		}, []string{"perfassert.NoRegression: head: the profile has no samples (base = baseline, head = current)"}},
		{"NoRegression, the thread renamed", func(ft perfassert.TestingT) bool {
			return perfassert.NoRegression(ft, ok, testutil.SevenFuncs("worker", 900e6), diff.WithSelection(analysis.Selection{Threads: []string{"main"}}))
		}, []string{`perfassert.NoRegression: head: the selection (thread "main") leaves no time; the profile has thread worker`}},
		{"NoRegression, a negative head", func(ft perfassert.TestingT) bool {
			return perfassert.NoRegression(ft, ok, testutil.SevenFuncs("main", -300e6))
		}, []string{"perfassert.NoRegression: diff: head profile 1: sample 0 has a negative samples/count value, -30"}},
		{"NoRegressionRuns, every head run empty", func(ft perfassert.TestingT) bool {
			return perfassert.NoRegressionRuns(ft, []*profile.Profile{ok, ok}, []*profile.Profile{testutil.TimeProfile(), testutil.TimeProfile()})
		}, []string{"perfassert.NoRegressionRuns: head (2 profiles): the profiles have no samples"}},
		{"MaxSelfTime, the thread renamed", func(ft perfassert.TestingT) bool {
			return perfassert.MaxSelfTime(ft, testutil.SevenFuncs("worker", 900e6), "main.f0", time.Second, perfassert.WithSelection(analysis.Selection{Threads: []string{"main"}}), perfassert.AllowMissing())
		}, []string{`perfassert.MaxSelfTime("main.f0"): perfassert: the selection (thread "main") leaves no time; the profile has thread worker`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{}
			if tc.check(ft) {
				t.Fatalf("passed; logs: %q", ft.logs)
			}
			for _, w := range tc.want {
				if !strings.Contains(ft.text(), w) {
					t.Errorf("failure\n%s\ndoes not say\n%s", ft.text(), w)
				}
			}
		})
	}
	// The same profiles with time on both sides are compared as ever.
	ft := &fakeT{}
	path := testutil.WriteProfile(t, dir, "same.pb.gz", ok)
	if !perfassert.MatchBaseline(ft, path, testutil.SevenFuncs("main", 500e6)) {
		t.Errorf("an identical profile failed: %s", ft.text())
	}
}
