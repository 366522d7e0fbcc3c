package budget

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// isCounted reports whether p holds exact counts (instructions counted by
// perfassert.Instructions or record --instructions, a callgrind file, and
// any other event counted exactly): marked exact, its first value a count.
// It does not look at the event's name.
func isCounted(p *profile.Profile) bool {
	return p != nil && meta.IsExact(p.Comments) && len(p.SampleType) > 0 && p.SampleType[0] != nil && p.SampleType[0].Unit == "count"
}

// counted reports whether every profile of both sides holds exact
// counts; an error when some do and some do not.
func counted(profiles, baseline []*profile.Profile) (bool, error) {
	n, total := 0, 0
	for _, ps := range [][]*profile.Profile{profiles, baseline} {
		for _, p := range ps {
			total++
			if isCounted(p) {
				n++
			}
		}
	}
	if n > 0 && n < total {
		return false, fmt.Errorf("max_regression: %d of the %d profiles hold exact counts and the others do not: compare counts with counts", n, total)
	}
	return n > 0, nil
}

// countSide is one side's profiles as one profile of processes (each
// profile's processes its own; one without iterations recorded, a
// callgrind file, is one process of one run), for diff.CompareCounts. The
// profiles are not modified.
func countSide(ps []*profile.Profile) (*profile.Profile, error) {
	var procs []*profile.Profile
	for i, p := range ps {
		if _, ok, err := meta.Get(p); err != nil {
			return nil, fmt.Errorf("profile %d: %w", i+1, err)
		} else if !ok {
			p = p.Copy()
			meta.Set(p, meta.Record{Name: fmt.Sprintf("profile %d", i+1), WorkUnit: meta.WorkRun, Runs: []meta.Run{{Work: 1}}})
		}
		split, err := meta.SplitProcesses(p)
		if err != nil {
			return nil, fmt.Errorf("profile %d: %w", i+1, err)
		}
		procs = append(procs, split...)
	}
	if len(procs) == 1 {
		return procs[0], nil
	}
	return meta.MergeProcesses(procs)
}

// selfPerIteration is each function's median self count per iteration
// over the processes of p (0 in a process where it did not run).
func selfPerIteration(p *profile.Profile) (map[string]float64, error) {
	procs, err := meta.SplitProcesses(p)
	if err != nil {
		return nil, err
	}
	per := map[string][]float64{}
	for i, q := range procs {
		rec, ok, err := meta.Get(q)
		if err != nil || !ok {
			return nil, fmt.Errorf("process %d records no iterations", i+1)
		}
		var work float64
		for _, r := range rec.Runs {
			work += r.Work
		}
		if !(work > 0) {
			return nil, fmt.Errorf("process %d records no iterations", i+1)
		}
		self := map[string]float64{}
		for _, s := range q.Sample {
			if len(s.Value) > 0 && len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
				self[s.Location[0].Line[0].Function.Name] += float64(s.Value[0]) / work
			}
		}
		for name, v := range self {
			for len(per[name]) < i {
				per[name] = append(per[name], 0)
			}
			per[name] = append(per[name], v)
		}
	}
	out := make(map[string]float64, len(per))
	for name, vs := range per {
		for len(vs) < len(procs) {
			vs = append(vs, 0)
		}
		out[name] = stats.Median(vs)
	}
	return out, nil
}

// countRegression checks a max_regression limit on exact counts: each
// function the rule names is judged by diff.CompareCounts (its self count
// per iteration beyond the baseline's spread, 0.5% of itself and 0.01% of
// the program's), never by shares with a minimum change, and fails when
// it regressed by more than the limit. A count below zero on a side (a
// difference of two processes) is shown, never judged.
func (c *checker) countRegression(r *Rule, l Limit) (RuleResult, error) {
	rr := newResult(r, l)
	if r.Metric != "" && r.Metric != diff.Self {
		return rr, fmt.Errorf("max_regression of exact counts judges each function's self count: metric %s cannot be judged", r.Metric)
	}
	if sel := r.Selection.String(); sel != "" {
		return rr, fmt.Errorf("max_regression of exact counts judges each function's self count of the whole profile: the rule's selection (%s) cannot be applied", sel)
	}
	if c.counts == nil {
		base, err := countSide(c.baseline)
		if err != nil {
			return rr, fmt.Errorf("baseline: %w", err)
		}
		head, err := countSide(c.profiles)
		if err != nil {
			return rr, err
		}
		rep, err := diff.CompareCounts(base, head, nil)
		if err != nil {
			return rr, err
		}
		c.counts = &countComparison{report: rep}
		if c.counts.base, err = selfPerIteration(base); err == nil {
			c.counts.head, err = selfPerIteration(head)
		}
		if err != nil {
			return rr, err
		}
	}
	cc := c.counts
	event := cc.report.Event
	var names []string
	for name := range cc.base {
		if r.selects(name) {
			names = append(names, name)
		}
	}
	for name := range cc.head {
		if _, ok := cc.base[name]; !ok && r.selects(name) {
			names = append(names, name)
		}
	}
	var negative []string
	names = slices.DeleteFunc(names, func(n string) bool {
		if slices.Contains(cc.report.Negative, n) {
			negative = append(negative, n)
			return true
		}
		return false
	})
	rr.Matched = len(names)
	if len(names) == 0 {
		rr.Missing = true
		rr.Pass = r.AllowMissing
		rr.Message = fmt.Sprintf("no function %s among the %d counted", r.selector(), len(cc.base)+len(cc.head))
		if len(negative) > 0 {
			// Found, and never a regression: shown, not judged.
			rr.Pass = true
			rr.Message = fmt.Sprintf("%s below zero on a side, not judged (a difference of two processes whose runtimes' work differed, not a count)", textfmt.Line(strings.Join(negative, ", ")))
		} else if r.AllowMissing {
			rr.Message += "; allowed by allow_missing"
		}
		return rr, nil
	}
	verdicts := map[string]diff.CountRow{}
	for _, row := range cc.report.Rows {
		verdicts[row.Name] = row
	}
	rel := func(n string) float64 {
		if cc.base[n] == 0 {
			return math.Inf(1)
		}
		return cc.head[n]/cc.base[n] - 1
	}
	fails := func(n string) bool {
		row, ok := verdicts[n]
		return ok && row.Verdict == diff.Regressed && rel(n) > l.Regression
	}
	// The worst: a failure first, then the largest relative change.
	slices.SortFunc(names, func(a, b string) int {
		if fails(a) != fails(b) {
			if fails(a) {
				return -1
			}
			return 1
		}
		if ra, rb := rel(a), rel(b); ra != rb {
			if ra > rb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	w := names[0]
	rr.Function = w
	rr.Verdict = diff.Unchanged
	allowed := ""
	if row, ok := verdicts[w]; ok {
		rr.Verdict = row.Verdict
		allowed = fmt.Sprintf("; allowed ±%s", textfmt.Count(math.Round(row.Allowed)))
	}
	rr.Pass = !fails(w)
	if !math.IsInf(rel(w), 0) {
		rr.Got = rel(w)
	}
	subject := w
	if r.Match != nil {
		subject = fmt.Sprintf("%s (worst of %d matching %s)", w, len(names), r.selector())
	}
	figures := fmt.Sprintf("self %s per iteration %s -> %s (%s, counted exactly%s)", event,
		textfmt.Count(math.Round(cc.base[w])), textfmt.Count(math.Round(cc.head[w])), changeWords(cc.base[w], cc.head[w]), allowed)
	switch {
	case rr.Verdict == diff.New:
		rr.Message = fmt.Sprintf("%s: new, not in the baseline (%s)", subject, figures)
	case !rr.Pass:
		rr.Message = fmt.Sprintf("%s: %s regressed by more than %s", subject, figures, textfmt.Percent(l.Regression))
	default:
		rr.Message = fmt.Sprintf("%s: %s %s, limit +%s", subject, figures, rr.Verdict, textfmt.Percent(l.Regression))
	}
	if len(negative) > 0 {
		rr.Warnings = append(rr.Warnings, fmt.Sprintf("%s below zero on a side (a difference of two processes), not judged", textfmt.Line(strings.Join(negative, ", "))))
	}
	return rr, nil
}

// countComparison is the comparison of counts a budget's max_regression
// limits share: diff's verdicts and each side's median self count per
// iteration, by function.
type countComparison struct {
	report     *diff.CountReport
	base, head map[string]float64
}

// changeWords is the change from a to b in percent, "new" from 0.
func changeWords(a, b float64) string {
	if a == 0 {
		if b == 0 {
			return "+0%"
		}
		return "new"
	}
	return fmt.Sprintf("%+.2f%%", 100*(b/a-1))
}
