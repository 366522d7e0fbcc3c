package budget

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/limits"
)

// Result is the outcome of checking profiles against a budget: one
// RuleResult per limit of every rule, in the order of the file.
type Result struct {
	Budget   string       `json:"budget"`
	Profiles int          `json:"profiles"`
	Baseline int          `json:"baseline_profiles"`
	Checks   []RuleResult `json:"checks"`
}

// RuleResult is one limit of one rule, checked.
type RuleResult struct {
	Line     int    `json:"line"`           // the limit's line in the budget file
	Rule     string `json:"rule"`           // the rule's name, or its selector
	Selector string `json:"selector"`       // function name or /regexp/
	Check    string `json:"check"`          // the limit's key: max_self, ...
	Pass     bool   `json:"pass"`           // the limit holds
	Missing  bool   `json:"missing"`        // no function matched the selector
	Matched  int    `json:"matched"`        // functions the selector matched
	Function string `json:"function"`       // the function judged: the worst one for a pattern
	File     string `json:"file,omitempty"` // its source file, when known
	FuncLine int64  `json:"function_line,omitempty"`
	// Unit is "ns", "ns/op", "share", "objects", "bytes", "instructions",
	// "instructions/op" or "relative" (of Check); Got
	// and Limit are in it. For max_regression Got is the change of the
	// worst matching function and Verdict/Q are diff's judgement of it.
	Unit    string       `json:"unit"`
	Got     float64      `json:"got"`
	Limit   float64      `json:"limit"`
	Verdict diff.Verdict `json:"verdict,omitempty"`
	Q       float64      `json:"q,omitempty"`
	// Message says in one line what was found, for people.
	Message string `json:"message"`
	// Warnings are caveats about the measurement: for max_regression,
	// diff's about the comparison and the judged function (too few runs,
	// too few samples); for the other limits, the limits package's
	// (limits.Result.Warnings: no or too few samples, lost samples, a
	// capture's time summed over its runs, the race detector).
	Warnings []string `json:"warnings,omitempty"`
}

// Passed reports whether every limit held.
func (r *Result) Passed() bool { return len(r.Failures()) == 0 }

// Failures returns the checks that failed.
func (r *Result) Failures() []RuleResult {
	var out []RuleResult
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}

// Check checks profiles (one or more runs of the program) against b.
// baseline is needed only by max_regression rules. Profiles are not modified.
// An error means the check could not be made (no profiles, a rule needing a
// baseline without one, a profile without time values, profiles that cannot
// be pooled because their sample types differ, a per-op limit on a profile
// that records no work count or on profiles counting work in different
// units); a failed limit is not an error but a RuleResult with Pass false.
func Check(b *Budget, profiles, baseline []*profile.Profile) (*Result, error) {
	if b == nil {
		return nil, errors.New("budget: nil budget")
	}
	if len(profiles) == 0 {
		return nil, errors.New("budget: no profiles to check")
	}
	for _, r := range b.Rules {
		for _, l := range r.Limits {
			if l.Bound.Quantity == "" && len(baseline) == 0 {
				return nil, fmt.Errorf("%s:%d: max_regression needs baseline profiles", b.Name, l.Line)
			}
		}
	}
	c := &checker{profiles: profiles, baseline: baseline, reports: map[regKey]*diff.Report{}}
	if len(baseline) > 0 {
		var err error
		if c.counted, err = counted(profiles, baseline); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name, err)
		}
	}
	res := &Result{Budget: b.Name, Profiles: len(profiles), Baseline: len(baseline)}
	for i := range b.Rules {
		r := &b.Rules[i]
		for _, l := range r.Limits {
			var rr RuleResult
			var err error
			switch {
			case l.Bound.Quantity == "" && c.counted:
				rr, err = c.countRegression(r, l)
			case l.Bound.Quantity == "":
				rr, err = c.regression(r, l)
			default:
				rr, err = c.limit(r, l)
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", b.Name, l.Line, err)
			}
			res.Checks = append(res.Checks, rr)
		}
	}
	return res, nil
}

type regKey struct {
	sel         string // the rule's Selection, in words
	metric      diff.Metric
	mode        diff.Mode
	assume      diff.Assumption
	minRelative float64
}

type checker struct {
	profiles, baseline []*profile.Profile
	limits             *limits.Checker // made when a limit first needs it
	reports            map[regKey]*diff.Report
	// counted says both sides hold exact counts: max_regression is
	// judged as counts (countRegression), made when a limit first
	// needs it.
	counted bool
	counts  *countComparison
}

// assertion returns what a limit of r checks as a limits check: the
// selector and the options, so that limits.Check(p, sel, l.Bound,
// opts...) is the check a budget line makes, result and text alike. The
// limit must not be max_regression, which diff judges.
func assertion(r *Rule, l Limit) (sel string, opts []limits.Option) {
	opts = []limits.Option{limits.WithSelection(r.Selection)}
	sel = r.Function
	if r.Match != nil {
		sel = r.Match.String()
		opts = append(opts, limits.Regexp(), limits.EachMatch())
	}
	if r.AllowMissing {
		opts = append(opts, limits.AllowMissing())
	}
	if l.PerIteration {
		opts = append(opts, limits.PerIteration())
	}
	return sel, opts
}

// limit checks one limit with the limits package: the result's numbers
// and its one-line text are the engine's.
func (c *checker) limit(r *Rule, l Limit) (RuleResult, error) {
	rr := newResult(r, l)
	if c.limits == nil {
		ck, err := limits.NewChecker(c.profiles...)
		if err != nil {
			return rr, err
		}
		c.limits = ck
	}
	sel, opts := assertion(r, l)
	res, err := c.limits.Check(sel, l.Bound, opts...)
	if err != nil {
		return rr, err
	}
	rr.Pass, rr.Missing, rr.Matched = res.Passed, res.Missing, res.Names
	if len(res.Matched) > 0 {
		f := res.Matched[0]
		rr.Function, rr.File, rr.FuncLine = f.Name, f.File, f.Line
	}
	switch {
	case res.Missing:
	case l.Bound.Quantity == limits.SelfShare || l.Bound.Quantity == limits.TotalShare:
		rr.Got = res.Share
	default:
		rr.Got = float64(res.Value)
	}
	rr.Message = res.Summary()
	rr.Warnings = res.Warnings
	return rr, nil
}

func newResult(r *Rule, l Limit) RuleResult {
	name := r.Name
	if name == "" {
		name = r.selector()
	}
	key, unit := l.key()
	return RuleResult{Line: l.Line, Rule: name, Selector: r.selector(), Check: key, Unit: unit, Limit: l.value()}
}

func (c *checker) regression(r *Rule, l Limit) (RuleResult, error) {
	rr := newResult(r, l)
	// The rule's selection, as the budget's other limits take it: a
	// function's share in a max_regression line is the one its
	// max_self_share line gives for the same profile (diff's default
	// would charge runtime.asyncPreempt to its caller, and the two lines
	// said 60.37% and 60.85% of one function in one profile).
	sel := r.Selection
	k := regKey{sel: sel.String(), metric: r.Metric, mode: r.Mode, assume: r.Assume, minRelative: l.Regression}
	rep, ok := c.reports[k]
	if !ok {
		opts := []diff.Option{
			diff.WithMetric(r.Metric), diff.WithMode(r.Mode),
			diff.WithMinChange(l.Regression),
			diff.WithSelection(sel),
		}
		if r.Assume != "" { // empty in a Rule built in Go: diff's default
			opts = append(opts, diff.WithAssumption(r.Assume))
		}
		var err error
		rep, err = diff.Compare(c.baseline, c.profiles, opts...)
		if err != nil {
			return rr, err
		}
		c.reports[k] = rep
	}
	var rows []diff.Row
	var all []suggest.Candidate
	for _, row := range rep.Rows {
		all = append(all, suggest.Candidate{Name: row.Name})
		if r.selects(row.Name) && row.Verdict != diff.Gone {
			rows = append(rows, row)
		}
	}
	rr.Matched = len(rows)
	if len(rows) == 0 {
		rr.Missing = true
		rr.Pass = r.AllowMissing
		rr.Message = fmt.Sprintf("no function %s among the %d compared", r.selector(), len(all))
		if sel := r.Selection.String(); sel != "" {
			rr.Message += " (" + sel + ")"
		}
		switch hints := suggest.Closest(strings.Trim(r.selector(), "/"), r.Match != nil, all, 3); {
		case r.AllowMissing:
			rr.Message += "; allowed by allow_missing"
		case len(hints) > 0:
			rr.Message += "; did you mean " + strings.Join(hints, ", ") + "?"
		}
		return rr, nil
	}
	// The worst row: a regression first, then the largest relative change.
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if (a.Verdict == diff.Regressed) != (b.Verdict == diff.Regressed) {
			return a.Verdict == diff.Regressed
		}
		if a.Relative != b.Relative {
			return a.Relative > b.Relative
		}
		return a.Name < b.Name
	})
	w := rows[0]
	rr.Function, rr.File = w.Name, w.File
	rr.Got, rr.Verdict, rr.Q = w.Relative, w.Verdict, w.Q
	rr.Warnings = append(append([]string(nil), rep.Warnings...), w.Warnings...)
	rr.Pass = w.Verdict != diff.Regressed
	subject := w.Name
	if r.Match != nil {
		subject = fmt.Sprintf("%s (worst of %d matching %s)", w.Name, len(rows), r.selector())
	}
	metric := string(r.Metric)
	if r.Mode == diff.Share {
		metric += " share"
	}
	f := rep.Figures(w)
	switch w.Verdict {
	case diff.New:
		rr.Message = fmt.Sprintf("%s: new, not in the baseline", subject)
	case diff.Regressed:
		rr.Message = fmt.Sprintf("%s: %s %s -> %s (%s %s, q=%.3g) regressed by more than %s", subject, metric,
			f.Base, f.Head, f.Change, rep.ChangeHeader(), w.Q, textfmt.Percent(l.Regression))
	default:
		rr.Message = fmt.Sprintf("%s: %s %s -> %s (%s %s, q=%.3g) %s, limit +%s", subject, metric,
			f.Base, f.Head, f.Change, rep.ChangeHeader(), w.Q, w.Verdict, textfmt.Percent(l.Regression))
	}
	return rr, nil
}

// selects reports whether r's selector names or matches a function.
func (r *Rule) selects(name string) bool {
	if r.Match != nil {
		return r.Match.MatchString(name)
	}
	return name == r.Function
}
