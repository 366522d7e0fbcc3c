package budget

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestCheckRefusesNothingToMeasure: a budget checked on profiles with
// nothing selected neither passes nor fails a limit: Check returns the
// *analysis.NoTimeError naming the side and the selection, for limits and
// for max_regression against a baseline alike.
func TestCheckRefusesNothingToMeasure(t *testing.T) {
	ok := testutil.SevenFuncs("main", 500e6)
	empty := testutil.TimeProfile()
	renamed := testutil.SevenFuncs("worker", 900e6)
	limit := "version: 1\nrules:\n  - function: main.f0\n    max_self: 2s\n    allow_missing: true\n"
	onMain := "version: 1\nrules:\n  - function: main.f0\n    thread: main\n    max_self: 2s\n"
	regression := "version: 1\nrules:\n  - function: main.f0\n    thread: main\n    max_regression: 10%\n"
	tests := []struct {
		name           string
		budget         string
		profiles, base []*profile.Profile
		want           string
	}{
		{"a limit on an empty profile", limit, []*profile.Profile{empty}, nil,
			"b.yaml:4: perfassert: the profile has no samples"},
		{"a limit on empty profiles", limit, []*profile.Profile{empty, empty}, nil,
			"b.yaml:4: perfassert: 2 profiles: the profiles have no samples"},
		{"a limit on a renamed thread", onMain, []*profile.Profile{renamed}, nil,
			`b.yaml:5: perfassert: the selection (thread "main") leaves no time; the profile has thread worker`},
		{"max_regression, an empty head", regression, []*profile.Profile{empty}, []*profile.Profile{ok},
			`b.yaml:5: diff: head: the profile has no samples (selection: thread "main")`},
		{"max_regression, an empty baseline", regression, []*profile.Profile{ok}, []*profile.Profile{empty},
			`b.yaml:5: diff: base: the profile has no samples (selection: thread "main")`},
		{"max_regression, a renamed thread", regression, []*profile.Profile{renamed}, []*profile.Profile{ok},
			`b.yaml:5: diff: head: the selection (thread "main") leaves no time; the profile has thread worker`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(mustParse(t, "b.yaml", tc.budget), tc.profiles, tc.base)
			if err == nil {
				t.Fatalf("checked: %+v", res.Checks)
			}
			var e *analysis.NoTimeError
			if !errors.Is(err, analysis.ErrNoTime) || !errors.As(err, &e) || err.Error() != tc.want {
				t.Errorf("err = %v\nwant an *analysis.NoTimeError: %s", err, tc.want)
			}
		})
	}
}

// TestCheckRefusesValuesItCannotSum: profiles pooled for a budget's limits
// are held to the loaders' rule on values together: two profiles of 2^62ns
// each would sum past int64.
func TestCheckRefusesValuesItCannotSum(t *testing.T) {
	big := testutil.TimeProfile(testutil.Sample{Stack: []string{"main.main", "main.f0"}, Nanos: 1 << 62})
	b := mustParse(t, "b.yaml", "version: 1\nrules:\n  - function: main.f0\n    max_self: 2s\n")
	if _, err := Check(b, []*profile.Profile{big}, nil); err != nil {
		t.Fatalf("one profile of 2^62ns: %v", err)
	}
	_, err := Check(b, []*profile.Profile{big, big}, nil)
	if err == nil || !strings.Contains(err.Error(), "perfassert: profile 2: sample 0: the cpu/nanoseconds values add up to more than") {
		t.Errorf("two profiles of 2^62ns: %v", err)
	}
	neg := testutil.SevenFuncs("", -300e6)
	if _, err := Check(b, []*profile.Profile{neg}, nil); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative value: %v", err)
	}
}
