package budget_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/budget"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

// reports holds what an assertion reported, failures and logs alike.
type reports []string

func (r *reports) Errorf(format string, args ...any) { r.add(format, args) }
func (r *reports) Logf(format string, args ...any)   { r.add(format, args) }
func (r *reports) add(format string, args []any)     { *r = append(*r, fmt.Sprintf(format, args...)) }

// first is the first line of the one report, or all of them when there
// are several.
func (r reports) first() string {
	if len(r) != 1 {
		return strings.Join(r, "\n---\n")
	}
	line, _, _ := strings.Cut(r[0], "\n")
	return line
}

func loadAll(t *testing.T, paths ...string) []*profile.Profile {
	t.Helper()
	var out []*profile.Profile
	for _, path := range paths {
		p, err := loaders.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func checkFile(t *testing.T, path string, ps []*profile.Profile) (*budget.Budget, *budget.Result) {
	t.Helper()
	b, err := budget.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := budget.Check(b, ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, res
}

// same compares a budget line with the assertion's result: pass, what was
// judged, the number and the text.
func same(t *testing.T, c budget.RuleResult, r *limits.Result) {
	t.Helper()
	got := float64(r.Value)
	if c.Unit == "share" {
		got = r.Share
	}
	if r.Missing {
		got = 0
	}
	fn := ""
	if len(r.Matched) > 0 {
		fn = r.Matched[0].Name
	}
	if c.Pass != r.Passed || c.Missing != r.Missing || c.Got != got || c.Function != fn || c.Matched != r.Names {
		t.Errorf("line %d: budget pass %v missing %v got %v function %q matched %d; assertion %v %v %v %q %d",
			c.Line, c.Pass, c.Missing, c.Got, c.Function, c.Matched, r.Passed, r.Missing, got, fn, r.Names)
	}
	if c.Message != r.Summary() {
		t.Errorf("line %d: budget line %q\nassertion         %q", c.Line, c.Message, r.Summary())
	}
	if strings.Join(c.Warnings, "\n") != strings.Join(r.Warnings, "\n") {
		t.Errorf("line %d: budget warnings %q, assertion's %q", c.Line, c.Warnings, r.Warnings)
	}
}

// TestBudgetLineIsTheAssertion: the limits of busy-fail.yaml, written by
// hand as the assertions a test would make, give what the budget lines
// give: pass or fail, the number, the function judged and the text (the
// assertion's failure text is the budget line's message after the check's
// and the profile's names).
func TestBudgetLineIsTheAssertion(t *testing.T) {
	p := loadAll(t, "../testdata/pprof/busy.pb.gz")[0]
	_, res := checkFile(t, "../testdata/budget/busy-fail.yaml", []*profile.Profile{p})
	// busy-fail.yaml: defaults drop_synthetic: true.
	drop := perfassert.WithSelection(analysis.Selection{DropSynthetic: true})
	ms := time.Millisecond
	tests := []struct {
		line   int
		check  string
		sel    string
		limit  limits.Limit
		opts   []perfassert.Option
		assert func(perfassert.TestingT) bool
	}{
		{7, "MaxSelfTime", "main.parseRecords", limits.Limit{Quantity: limits.SelfTime, Time: 100 * ms}, []perfassert.Option{drop},
			func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "main.parseRecords", 100*ms, drop)
			}},
		{8, "MaxTotalShare", "main.parseRecords", limits.Limit{Quantity: limits.TotalShare, Share: 0.70}, []perfassert.Option{drop},
			func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalShare(t, p, "main.parseRecords", 0.70, drop)
			}},
		{10, "MaxSelfTime", "^crypto/", limits.Limit{Quantity: limits.SelfTime, Time: time.Second},
			[]perfassert.Option{perfassert.Regexp(), perfassert.EachMatch(), drop},
			func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "^crypto/", time.Second, perfassert.Regexp(), perfassert.EachMatch(), drop)
			}},
		{12, "MaxSelfTime", "main.parseRecord", limits.Limit{Quantity: limits.SelfTime, Time: time.Second}, []perfassert.Option{drop},
			func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "main.parseRecord", time.Second, drop)
			}},
	}
	if len(res.Checks) != len(tests) {
		t.Fatalf("%d checks, want %d", len(res.Checks), len(tests))
	}
	for i, tc := range tests {
		c := res.Checks[i]
		if c.Line != tc.line {
			t.Fatalf("check %d is line %d, want %d", i, c.Line, tc.line)
		}
		r, err := limits.Check(p, tc.sel, tc.limit, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		same(t, c, r)
		rt := &reports{}
		if passed := tc.assert(rt); passed != c.Pass {
			t.Errorf("line %d: assertion passed %v, budget line %v", c.Line, passed, c.Pass)
		}
		// The failure (or pass) text's first line is the budget line's
		// message, named; a missing function's hints follow on lines of
		// their own.
		head, _, _ := strings.Cut(c.Message, "; did you mean")
		if want := "perfassert." + tc.check + ": profile: " + head; rt.first() != want {
			t.Errorf("line %d: assertion reported %q\nwant the budget line's message %q", c.Line, rt.first(), want)
		}
	}
	// The numbers, worked by hand from go tool pprof -top on busy.pb.gz.
	for i, want := range []float64{150e6, 990.0 / 1480, 1050e6, 0} {
		if got := res.Checks[i].Got; got < want*(1-1e-9) || got > want*(1+1e-9) {
			t.Errorf("line %d: got %v, want %v", res.Checks[i].Line, got, want)
		}
	}
}

// TestEveryBudgetLineIsItsAssertion: every limit of every budget file under
// testdata (but max_regression, which diff judges) gives the result of
// the limits check of its Bound, on one profile and on several.
func TestEveryBudgetLineIsItsAssertion(t *testing.T) {
	busy := loadAll(t, "../testdata/pprof/busy.pb.gz")
	heads, err := filepath.Glob("../testdata/record/head/*.pb.gz")
	if err != nil || len(heads) < 2 {
		t.Fatalf("record fixtures: %v %v", heads, err)
	}
	records := loadAll(t, heads...)
	for _, tc := range []struct {
		file     string
		profiles []*profile.Profile
	}{
		{"busy.yaml", busy},
		{"busy.json", busy},
		{"busy-fail.yaml", busy},
		{"perop.yaml", records},
		{"perop.yaml", records[:1]},
	} {
		b, res := checkFile(t, "../testdata/budget/"+tc.file, tc.profiles)
		ck, err := limits.NewChecker(tc.profiles...)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for ri := range b.Rules {
			r := &b.Rules[ri]
			for _, l := range r.Limits {
				c := res.Checks[i]
				i++
				sel, opts := budget.Assertion(r, l)
				a, err := ck.Check(sel, l.Bound, opts...)
				if err != nil {
					t.Fatal(err)
				}
				same(t, c, a)
				if len(tc.profiles) == 1 {
					one, err := limits.Check(tc.profiles[0], sel, l.Bound, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if one.String() != a.String() {
						t.Errorf("%s:%d: Check and a Checker of one profile differ:\n%s\n%s", tc.file, l.Line, one, a)
					}
				}
			}
		}
		if i != len(res.Checks) || i == 0 {
			t.Errorf("%s: %d limits, %d checks", tc.file, i, len(res.Checks))
		}
	}
}
