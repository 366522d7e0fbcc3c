package budget

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
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
	Kind     Kind   `json:"check"`          // max_self, ...
	Pass     bool   `json:"pass"`           // the limit holds
	Missing  bool   `json:"missing"`        // no function matched the selector
	Matched  int    `json:"matched"`        // functions the selector matched
	Function string `json:"function"`       // the function judged: the worst one for a pattern
	File     string `json:"file,omitempty"` // its source file, when known
	FuncLine int64  `json:"function_line,omitempty"`
	// Unit is "ns", "share" or "relative" (see Kind.Unit); Got and Limit
	// are in it. For max_regression Got is the change of the worst matching
	// function and Verdict/Q are diff's judgement of it.
	Unit    string       `json:"unit"`
	Got     float64      `json:"got"`
	Limit   float64      `json:"limit"`
	Verdict diff.Verdict `json:"verdict,omitempty"`
	Q       float64      `json:"q,omitempty"`
	// Message says in one line what was found, for people.
	Message string `json:"message"`
	// Warnings are diff's caveats about the judged function (too few
	// runs, too few samples), for max_regression.
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
// baseline without one, a profile without time values); a failed limit is
// not an error but a RuleResult with Pass false.
func Check(b *Budget, profiles, baseline []*profile.Profile) (*Result, error) {
	if b == nil {
		return nil, errors.New("budget: nil budget")
	}
	if len(profiles) == 0 {
		return nil, errors.New("budget: no profiles to check")
	}
	for _, r := range b.Rules {
		for _, l := range r.Limits {
			if l.Kind == MaxRegression && len(baseline) == 0 {
				return nil, fmt.Errorf("%s:%d: max_regression needs baseline profiles", b.Name, l.Line)
			}
		}
	}
	c := &checker{profiles: profiles, baseline: baseline, tables: map[selKey][]*analysis.Table{}, reports: map[regKey]*diff.Report{}, work: -1}
	res := &Result{Budget: b.Name, Profiles: len(profiles), Baseline: len(baseline)}
	for i := range b.Rules {
		r := &b.Rules[i]
		for _, l := range r.Limits {
			var rr RuleResult
			var err error
			if l.Kind == MaxRegression {
				rr, err = c.regression(r, l)
			} else {
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

type selKey struct {
	thread, process string
	dropSynthetic   bool
}

type regKey struct {
	sel         selKey
	metric      diff.Metric
	mode        diff.Mode
	assume      diff.Assumption
	minRelative float64
}

type checker struct {
	profiles, baseline []*profile.Profile
	tables             map[selKey][]*analysis.Table
	reports            map[regKey]*diff.Report
	work               float64 // of all profiles, for per-op limits; -1 until read
	workUnit           string
}

// workDone returns the work the profiles record, summed, and its unit.
func (c *checker) workDone() (float64, string, error) {
	if c.work >= 0 {
		return c.work, c.workUnit, nil
	}
	var sum float64
	unit, from := "", 0
	for i, p := range c.profiles {
		rec, _, err := meta.Get(p)
		if err != nil {
			return 0, "", fmt.Errorf("profile %d: %w", i+1, err)
		}
		var w float64
		for _, r := range rec.Runs {
			w += r.Work
		}
		if !(w > 0) || rec.WorkUnit == "" {
			name := ""
			if rec.Name != "" {
				name = fmt.Sprintf(" (%s)", rec.Name)
			}
			return 0, "", fmt.Errorf("profile %d%s records no work count, so time per op is unknown: per-op limits need profiles written by hotbudget record (benchmark ops) or perfassert.Capture (iterations); use max_self or max_total for others", i+1, name)
		}
		if unit != "" && rec.WorkUnit != unit {
			return 0, "", fmt.Errorf("profile %d counts its work in %s, profile %d in %s: per-op limits need one unit of work", from, unit, i+1, rec.WorkUnit)
		}
		if unit == "" {
			unit, from = rec.WorkUnit, i+1
		}
		sum += w
	}
	c.work, c.workUnit = sum, unit
	return sum, unit, nil
}

func (c *checker) tablesFor(r *Rule) ([]*analysis.Table, error) {
	k := selKey{r.Thread, r.Process, r.DropSynthetic}
	if t, ok := c.tables[k]; ok {
		return t, nil
	}
	var opts []analysis.Option
	if r.Thread != "" {
		opts = append(opts, analysis.Thread(r.Thread))
	}
	if r.Process != "" {
		opts = append(opts, analysis.Process(r.Process))
	}
	if r.DropSynthetic {
		opts = append(opts, analysis.DropSynthetic())
	}
	ts := make([]*analysis.Table, len(c.profiles))
	for i, p := range c.profiles {
		t, err := analysis.Functions(p, opts...)
		if err != nil {
			return nil, fmt.Errorf("profile %d: %w", i+1, err)
		}
		ts[i] = t
	}
	c.tables[k] = ts
	return ts, nil
}

// measure is one function's mean over runs.
type measure struct {
	name              string
	file              string
	line              int64
	self, total       float64 // ns
	selfSh, totalShar float64
}

func (m *measure) value(k Kind) float64 {
	switch k {
	case MaxSelf, MaxSelfPerOp:
		return m.self
	case MaxTotal, MaxTotalPerOp:
		return m.total
	case MaxSelfShare:
		return m.selfSh
	}
	return m.totalShar
}

// measures returns the mean per function name over runs of the functions r selects.
func measures(r *Rule, ts []*analysis.Table) []*measure {
	byName := map[string]*measure{}
	var order []*measure
	n := float64(len(ts))
	for _, t := range ts {
		for _, f := range t.Functions {
			if !selects(r, f.Name) {
				continue
			}
			m := byName[f.Name]
			if m == nil {
				m = &measure{name: f.Name, file: f.File, line: f.Line}
				byName[f.Name] = m
				order = append(order, m)
			}
			m.self += float64(f.Self) / n
			m.total += float64(f.Total) / n
			m.selfSh += f.SelfShare / n
			m.totalShar += f.TotalShare / n
		}
	}
	return order
}

func selects(r *Rule, name string) bool {
	if r.Match != nil {
		return r.Match.MatchString(name)
	}
	return name == r.Function
}

func (c *checker) limit(r *Rule, l Limit) (RuleResult, error) {
	rr := newResult(r, l)
	ts, err := c.tablesFor(r)
	if err != nil {
		return rr, err
	}
	// perRun turns a mean per run into the measured quantity: the same,
	// or per unit of work (time of all runs over work of all runs).
	perRun, work, unit := 1.0, 0.0, ""
	if l.Kind == MaxSelfPerOp || l.Kind == MaxTotalPerOp {
		if work, unit, err = c.workDone(); err != nil {
			return rr, err
		}
		perRun = float64(len(ts)) / work
	}
	ms := measures(r, ts)
	rr.Matched = len(ms)
	if len(ms) == 0 {
		return missing(rr, r, names(ts)), nil
	}
	worst := ms[0]
	for _, m := range ms[1:] {
		if m.value(l.Kind) > worst.value(l.Kind) || (m.value(l.Kind) == worst.value(l.Kind) && m.name < worst.name) {
			worst = m
		}
	}
	rr.Function, rr.File, rr.FuncLine = worst.name, worst.file, worst.line
	rr.Got = worst.value(l.Kind) * perRun
	rr.Pass = rr.Got <= l.Value
	var total float64
	for _, t := range ts {
		total += float64(t.Total) / float64(len(ts))
	}
	op := "<="
	if !rr.Pass {
		op = ">"
	}
	subject := worst.name
	if r.Match != nil {
		subject = fmt.Sprintf("%s (worst of %d matching %s)", worst.name, len(ms), r.Selector())
	}
	what := map[Kind]string{MaxSelf: "self", MaxTotal: "total", MaxSelfShare: "self share", MaxTotalShare: "total share",
		MaxSelfPerOp: "self", MaxTotalPerOp: "total"}[l.Kind]
	switch l.Kind.Unit() {
	case "ns/op":
		rr.Message = fmt.Sprintf("%s: %s %s per %s %s %s (%s of %s total over %s %ss)", subject, what, fmtNS(rr.Got), unit, op,
			fmtNS(l.Value), fmtNS(worst.value(l.Kind)*float64(len(ts))), fmtNS(total*float64(len(ts))), fmtCount(work), unit)
	case "ns":
		share := 0.0
		if total > 0 {
			share = rr.Got / total
		}
		rr.Message = fmt.Sprintf("%s: %s %s %s %s (%s of %s total)", subject, what, fmtNS(rr.Got), op, fmtNS(l.Value), fmtPct(share), fmtNS(total))
	default:
		rr.Message = fmt.Sprintf("%s: %s %s %s %s (%s of %s total)", subject, what, fmtPct(rr.Got), op, fmtPct(l.Value), fmtNS(rr.Got*total), fmtNS(total))
	}
	if len(ts) > 1 {
		rr.Message += fmt.Sprintf(", mean of %d runs", len(ts))
	}
	return rr, nil
}

func newResult(r *Rule, l Limit) RuleResult {
	name := r.Name
	if name == "" {
		name = r.Selector()
	}
	return RuleResult{Line: l.Line, Rule: name, Selector: r.Selector(), Kind: l.Kind, Unit: l.Kind.Unit(), Limit: l.Value}
}

// missing fills in the result for a selector that matched nothing.
func missing(rr RuleResult, r *Rule, all []string) RuleResult {
	rr.Missing = true
	rr.Pass = r.AllowMissing
	where := ""
	if r.Thread != "" || r.Process != "" {
		where = fmt.Sprintf(" (thread %q, process %q)", r.Thread, r.Process)
	}
	if r.Match != nil {
		rr.Message = fmt.Sprintf("no function matches %s in the profiles%s", r.Selector(), where)
	} else {
		rr.Message = fmt.Sprintf("no function %s in the profiles%s", r.Function, where)
	}
	if r.AllowMissing {
		rr.Message += "; allowed by allow_missing"
		return rr
	}
	if hints := closest(strings.Trim(r.Selector(), "/"), all, 3); len(hints) > 0 {
		rr.Message += "; did you mean " + strings.Join(hints, ", ") + "?"
	}
	return rr
}

func names(ts []*analysis.Table) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		for _, f := range t.Functions {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f.Name)
			}
		}
	}
	return out
}

func (c *checker) regression(r *Rule, l Limit) (RuleResult, error) {
	rr := newResult(r, l)
	k := regKey{sel: selKey{r.Thread, r.Process, r.DropSynthetic}, metric: r.Metric, mode: r.Mode, assume: r.Assume, minRelative: l.Value}
	rep, ok := c.reports[k]
	if !ok {
		opts := []diff.Option{
			diff.WithMetric(r.Metric), diff.WithMode(r.Mode),
			diff.WithMinChange(l.Value, diff.DefaultSettings.MinAbsolute),
		}
		if r.Assume != "" { // empty in a Rule built in Go: diff's default
			opts = append(opts, diff.WithAssumption(r.Assume))
		}
		if r.Thread != "" {
			opts = append(opts, diff.WithThread(r.Thread))
		}
		if r.Process != "" {
			opts = append(opts, diff.WithProcess(r.Process))
		}
		if r.DropSynthetic {
			opts = append(opts, diff.WithoutSynthetic())
		}
		var err error
		rep, err = diff.Compare(c.baseline, c.profiles, opts...)
		if err != nil {
			return rr, err
		}
		c.reports[k] = rep
	}
	var rows []diff.Row
	var all []string
	for _, row := range rep.Rows {
		all = append(all, row.Name)
		if selects(r, row.Name) && row.Verdict != diff.Gone {
			rows = append(rows, row)
		}
	}
	rr.Matched = len(rows)
	if len(rows) == 0 {
		return missing(rr, r, all), nil
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
		subject = fmt.Sprintf("%s (worst of %d matching %s)", w.Name, len(rows), r.Selector())
	}
	metric := string(r.Metric)
	if r.Mode == diff.Share {
		metric += " share"
	}
	switch w.Verdict {
	case diff.New:
		rr.Message = fmt.Sprintf("%s: new, not in the baseline", subject)
	case diff.Regressed:
		rr.Message = fmt.Sprintf("%s: %s %s -> %s (%+.1f%%, q=%.3g) regressed by more than %s", subject, metric,
			fmtMetric(w.Base.Metric, r.Mode), fmtMetric(w.Head.Metric, r.Mode), 100*w.Relative, w.Q, fmtPct(l.Value))
	default:
		rr.Message = fmt.Sprintf("%s: %s %s -> %s (%+.1f%%, q=%.3g) %s, limit +%s", subject, metric,
			fmtMetric(w.Base.Metric, r.Mode), fmtMetric(w.Head.Metric, r.Mode), 100*w.Relative, w.Q, w.Verdict, fmtPct(l.Value))
	}
	return rr, nil
}

func fmtMetric(v float64, m diff.Mode) string {
	if m == diff.Share {
		return fmtPct(v)
	}
	return fmtNS(v)
}

// fmtNS formats nanoseconds as pprof does: the largest unit in which the
// value is at least 1, two decimals without a trailing ".00".
func fmtNS(ns float64) string {
	if ns == 0 {
		return "0s"
	}
	d := time.Duration(ns)
	v, unit := float64(d), "ns"
	switch a := max(v, -v); {
	case a >= 1e9:
		v, unit = v/1e9, "s"
	case a >= 1e6:
		v, unit = v/1e6, "ms"
	case a >= 1e3:
		v, unit = v/1e3, "µs"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.2f", v), ".00") + unit
}

// fmtCount formats a count of work units: an integer when it is one.
func fmtCount(w float64) string {
	return strconv.FormatFloat(w, 'f', -1, 64)
}

func fmtPct(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.2f", 100*f), ".00") + "%"
}

var nonWord = regexp.MustCompile(`[^a-z0-9_]+`)

// closest returns up to n names most like want: names containing it (or
// its last element) first, then by edit distance.
func closest(want string, all []string, n int) []string {
	if want == "" || len(all) == 0 {
		return nil
	}
	type cand struct {
		name string
		d    int
	}
	lw := strings.ToLower(want)
	short := lw
	if i := strings.LastIndexAny(short, "./"); i >= 0 && i+1 < len(short) {
		short = short[i+1:]
	}
	short = nonWord.ReplaceAllString(short, "")
	var cs []cand
	for _, name := range all {
		ln := strings.ToLower(name)
		var d int
		switch {
		case strings.Contains(ln, lw):
			d = 0
		case short != "" && strings.Contains(ln, short):
			d = 1
		case len(all) <= 5000:
			d = 2 + editDistance(lw, ln)
		default:
			continue
		}
		if d > 2+len(lw)/3 {
			continue // nothing alike
		}
		cs = append(cs, cand{name, d})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		if i > 0 && cs[0].d <= 1 && cs[i].d > 1 {
			break // names containing the wanted one are better hints than look-alikes
		}
		out = append(out, cs[i].name)
	}
	return out
}

// editDistance is Levenshtein's distance on bytes, with both strings cut to
// 128 bytes to bound the work.
func editDistance(a, b string) int {
	a, b = a[:min(len(a), 128)], b[:min(len(b), 128)]
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
