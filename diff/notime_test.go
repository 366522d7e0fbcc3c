package diff_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// program is a profile of seven functions on one thread, the function
// a taking aNanos: the base side of the probes below.
func program(thread string, aNanos int64) *profile.Profile {
	var ss []testutil.Sample
	for i, ns := range []int64{aNanos, 300e6, 100e6, 50e6, 30e6, 20e6} {
		ss = append(ss, testutil.Sample{Stack: []string{"main.main", fmt.Sprintf("main.f%d", i)}, Nanos: ns, Thread: thread})
	}
	return testutil.TimeProfile(ss...)
}

// TestNoGreenByAbsence rebuilds the probes that turned the gate green: a
// head side with nothing to judge passed as "no regression among 7
// functions". Compare and CompareIndex (the command line's path) now
// refuse it with an *analysis.NoTimeError naming the side and the
// selection, as they refuse a base with nothing.
func TestNoGreenByAbsence(t *testing.T) {
	base := program("main", 500e6)
	tests := []struct {
		name       string
		base, head *profile.Profile
		opts       []diff.Option
		want       string
	}{
		{"empty head", base, testutil.TimeProfile(), nil, "diff: head: the profile has no samples"},
		{"empty base", testutil.TimeProfile(), base, nil, "diff: base: the profile has no samples"},
		{"the change renamed the thread", base, program("worker", 900e6), []diff.Option{diff.WithSelection(analysis.Selection{Threads: []string{"main"}})},
			`diff: head: the selection (thread "main") leaves no time; the profile has thread worker`},
		{"a process on neither side", base, base, []diff.Option{diff.WithSelection(analysis.Selection{Processes: []string{"4242"}})},
			`diff: base: the selection (process "4242") leaves no time; the profile has thread main`},
		{"a focus matching nothing on head", program("", 500e6), testutil.TimeProfile(testutil.Sample{Stack: []string{"main.main", "main.g"}, Nanos: 1e9}),
			[]diff.Option{diff.WithSelection(analysis.Selection{Focus: regexp.MustCompile(`^main\.f0$`)})}, `diff: head: the selection (focus /^main\.f0$/) leaves no time`},
		{"only synthetic frames on head", base, testutil.TimeProfile(testutil.Sample{Stack: []string{"(root)", "(idle)"}, Nanos: 1e9}),
			[]diff.Option{diff.WithSelection(analysis.Selection{DropSynthetic: true})}, "diff: head: the selection (without synthetic frames) leaves no time"},
		{"the functions judged are gone from head", base, testutil.TimeProfile(testutil.Sample{Stack: []string{"other.main", "other.g"}, Nanos: 1e9}),
			[]diff.Option{diff.WithOnly(regexp.MustCompile(`^main\.`))}, `diff: head: no time in the functions judged (matching /^main\./)`},
		{"--only matching nothing", base, base, []diff.Option{diff.WithOnly(regexp.MustCompile(`^nothing$`))},
			`diff: base: no time in the functions judged (matching /^nothing$/)`},
		{"absolute mode", base, testutil.TimeProfile(), []diff.Option{diff.WithMode(diff.Absolute)}, "diff: head: the profile has no samples"},
		{"an anchor on an empty head", base, testutil.TimeProfile(), []diff.Option{diff.WithAnchor("main.main")}, "diff: head: the profile has no samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, rep *diff.Report, err error) {
				t.Helper()
				if err == nil {
					var b bytes.Buffer
					rep.Write(&b, "text")
					t.Fatalf("%s judged it:\n%s", how, b.String())
				}
				var e *analysis.NoTimeError
				if !errors.Is(err, analysis.ErrNoTime) || !errors.As(err, &e) || err.Error() != tc.want {
					t.Errorf("%s: %v, want an *analysis.NoTimeError: %s", how, err, tc.want)
				}
			}
			rep, err := diff.Compare([]*profile.Profile{tc.base}, []*profile.Profile{tc.head}, tc.opts...)
			check("Compare", rep, err)
			bx, hx := idx(t, tc.base), idx(t, tc.head)
			rep, err = diff.CompareIndex([]*analysis.Index{bx}, []*analysis.Index{hx}, tc.opts...)
			check("CompareIndex", rep, err)
		})
	}
	// The selection that leaves time on both sides compares as before.
	rep, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{program("main", 900e6)}, diff.WithSelection(analysis.Selection{Threads: []string{"main"}}))
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, rep, "main.f0"); r.Relative <= 0 {
		t.Errorf("main.f0 %+v: want it slower", r)
	}
}

// TestNoGreenBySomeRuns: the rule holds for a side as a whole, every run
// of it: a head of two empty runs is refused, naming both.
func TestNoGreenBySomeRuns(t *testing.T) {
	base := program("main", 500e6)
	_, err := diff.Compare([]*profile.Profile{base, base}, []*profile.Profile{testutil.TimeProfile(), testutil.TimeProfile()})
	if !errors.Is(err, analysis.ErrNoTime) || err.Error() != "diff: head (2 profiles): the profiles have no samples" {
		t.Errorf("two empty head runs: %v", err)
	}
}

// TestCompareRefusesValuesItCannotSum: profiles built in memory reach
// Compare without a loader, and are held to the loaders' rule on values:
// a negative value gave shares of -150% and 250%, two samples of 2^62ns a
// total of -2562047hrs.
func TestCompareRefusesValuesItCannotSum(t *testing.T) {
	base := program("", 500e6)
	for _, tc := range []struct {
		name string
		head *profile.Profile
		want string
	}{
		{"negative", program("", -300e6), "diff: head profile 1: sample 0 has a negative samples/count value, -30"},
		{"negative total", program("", -3000e6), "diff: head profile 1: sample 0 has a negative samples/count value, -300"},
		{"up to the limit", program("", 1<<62), ""},
		{"overflow", testutil.TimeProfile(
			testutil.Sample{Stack: []string{"main.main", "main.f0"}, Nanos: 1 << 62},
			testutil.Sample{Stack: []string{"main.main", "main.f1"}, Nanos: 1 << 62}),
			"diff: head profile 1: sample 1: the cpu/nanoseconds values add up to more than 9223372036854775807 nanoseconds"},
	} {
		rep, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{tc.head})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "":
			if r := rowOf(t, rep, "main.f0"); r.Head.SelfShare <= 0 || r.Head.SelfShare > 1 {
				t.Errorf("%s: share %v", tc.name, r.Head.SelfShare)
			}
		case err == nil || !strings.HasPrefix(err.Error(), tc.want):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	// Runs whose totals add up past int64 between them.
	big := testutil.TimeProfile(testutil.Sample{Stack: []string{"main.main", "main.f0"}, Nanos: 1<<62 + 1<<61})
	if _, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{big, big}, diff.WithMode(diff.Absolute)); err == nil ||
		!strings.Contains(err.Error(), "overflows int64") {
		t.Errorf("runs summing past int64: %v", err)
	}
}

func idx(t *testing.T, p *profile.Profile) *analysis.Index {
	t.Helper()
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
