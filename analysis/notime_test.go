package analysis_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestCheckTime holds the one rule against measuring nothing to each way a
// profile can leave no function any time: no samples, a thread that is not
// there (a change renamed it), a focus that matches nothing, an ignore
// that matches everything, only synthetic frames dropped; and lets through
// every profile with time, however little.
func TestCheckTime(t *testing.T) {
	main := func(thread string, nanos int64, leaf string) testutil.Sample {
		return testutil.Sample{Stack: []string{"main.main", leaf}, Nanos: nanos, Thread: thread}
	}
	worker := testutil.TimeProfile(main("worker", 30e6, "main.a"), main("io", 10e6, "main.b"))
	tests := []struct {
		name string
		x    *analysis.Index
		sel  analysis.Selection
		want string // "" for no error
	}{
		{"time", index(t, worker), analysis.Selection{}, ""},
		{"one sample of 1ns", index(t, testutil.TimeProfile(main("", 1, "main.a"))), analysis.Selection{}, ""},
		{"the thread is there", index(t, worker), analysis.Selection{Threads: []string{"io"}}, ""},
		{"no samples", index(t, testutil.TimeProfile()), analysis.Selection{},
			"the profile has no samples"},
		{"no samples, with a selection", index(t, testutil.TimeProfile()), analysis.Selection{Threads: []string{"main"}},
			`the profile has no samples (selection: thread "main")`},
		{"samples without time", index(t, testutil.TimeProfile(main("", 0, "main.a"))), analysis.Selection{},
			"its samples hold no time"},
		{"a renamed thread", index(t, worker), analysis.Selection{Threads: []string{"main"}},
			`the selection (thread "main") leaves no time; the profile has thread io; thread worker`},
		{"a process that is not there", index(t, worker), analysis.Selection{Processes: []string{"99"}},
			`the selection (process "99") leaves no time; the profile has thread io; thread worker`},
		{"a focus matching nothing", index(t, worker), analysis.Selection{Focus: regexp.MustCompile(`^main\.z$`)},
			`the selection (focus /^main\.z$/) leaves no time`},
		{"ignore matching everything", index(t, worker), analysis.Selection{Ignore: regexp.MustCompile(`^main\.main$`)},
			`the selection (ignore /^main\.main$/) leaves no time`},
		{"only synthetic frames", index(t, testutil.TimeProfile(testutil.Sample{Stack: []string{"(root)", "(idle)"}, Nanos: 5e6})),
			analysis.Selection{DropSynthetic: true}, "the selection (without synthetic frames) leaves no time"},
		// ToCaller moves time, removes none; it is not named.
		{"charged to a caller", index(t, testutil.TimeProfile()), analysis.Selection{ToCaller: regexp.MustCompile(`x`)},
			"the profile has no samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := tc.x.Table(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			err = analysis.CheckTime("", tc.sel, []*analysis.Index{tc.x}, []*analysis.Table{tab})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused a profile with time: %v", err)
				}
				return
			}
			var e *analysis.NoTimeError
			if !errors.Is(err, analysis.ErrNoTime) || !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *analysis.NoTimeError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

// TestNoTimeErrorNamesTheProfiles: the side and the files, as far as the
// caller knows them, start the message.
func TestNoTimeErrorNamesTheProfiles(t *testing.T) {
	sel := analysis.Selection{Threads: []string{"main"}}
	tests := []struct {
		e    analysis.NoTimeError
		want string
	}{
		{analysis.NoTimeError{Side: "head", Profiles: 1, Samples: 3, Selection: sel},
			`head: the selection (thread "main") leaves no time`},
		{analysis.NoTimeError{Side: "head", Profiles: 2, Samples: 3, Selection: sel},
			`head (2 profiles): the selection (thread "main") leaves no time`},
		{analysis.NoTimeError{Side: "base", Files: []string{"a.pb.gz", "b.pb.gz"}, Profiles: 2},
			"base (a.pb.gz, b.pb.gz): the profiles have no samples"},
		{analysis.NoTimeError{Side: "head", Files: []string{"1", "2", "3", "4", "5"}, Profiles: 5, Samples: 9, Only: `^app\.`},
			`head (1, 2, 3 and 2 more): no time in the functions judged (matching /^app\./)`},
		{analysis.NoTimeError{Files: []string{"cpu.pb.gz"}, Profiles: 1, Samples: 9, Selection: sel, Have: "thread worker"},
			`cpu.pb.gz: the selection (thread "main") leaves no time; the profile has thread worker`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func index(t *testing.T, p *profile.Profile) *analysis.Index {
	t.Helper()
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
