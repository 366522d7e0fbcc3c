package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// One verdict (issue 32): record's gate decides on three things, the
// functions' CPU time (statistics, per benchmark), the benchmarks' results
// (benchstat's statistics) and the allocations per op (exact); its report
// states the decision, its exit code and the reason first and last, and
// every section says which measure it judges.

// recordVerdict is the gate's decision in one line and its exit code: what
// regressed, by measure, or that nothing did.
func recordVerdict(funcs []*diff.Report, benches *bench.Report, allocs []*diff.AllocReport) (string, int) {
	var reasons []string
	if s := slowerFunctions(funcs); s != "" {
		reasons = append(reasons, "functions' CPU time: "+s)
	}
	if rows := benches.Regressions(); len(rows) > 0 {
		var names []string
		for _, r := range rows {
			names = append(names, fmt.Sprintf("%s %s %+.1f%%", r.Name, r.Unit, 100*r.Relative))
		}
		reasons = append(reasons, "benchmark results: "+listed(names, 4))
	}
	var al []string
	for _, r := range allocs {
		if r.Failed() {
			for _, row := range r.Regressions() {
				al = append(al, fmt.Sprintf("%s in %s", shortName(row.Name), r.Name))
			}
		}
	}
	if len(al) > 0 {
		reasons = append(reasons, "allocations per op: "+listed(al, 4))
	}
	if len(reasons) == 0 {
		line := fmt.Sprintf("hotbudget record: pass (exit 0): no function, benchmark result or allocation regressed in %s", plural(len(funcs), "benchmark", "benchmarks"))
		if near := nearMisses(funcs); near != "" {
			line += "; closest to failing: " + near
		}
		return line, exitOK
	}
	return "hotbudget record: regressed (exit 1): " + strings.Join(reasons, "; "), exitFail
}

// slowerFunctions names the functions judged regressed, each once, with the
// range of their changes and how many benchmarks judged them so.
func slowerFunctions(funcs []*diff.Report) string {
	type agg struct {
		lo, hi float64
		n      int
	}
	by := map[string]*agg{}
	for _, r := range funcs {
		for _, row := range r.Regressions() {
			a := by[row.Name]
			if a == nil {
				a = &agg{lo: row.Relative, hi: row.Relative}
				by[row.Name] = a
			}
			a.lo, a.hi = min(a.lo, row.Relative), max(a.hi, row.Relative)
			a.n++
		}
	}
	if len(by) == 0 {
		return ""
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if by[names[i]].n != by[names[j]].n {
			return by[names[i]].n > by[names[j]].n
		}
		return names[i] < names[j]
	})
	var out []string
	for _, n := range names {
		a := by[n]
		ch := fmt.Sprintf("%+.0f%%", 100*a.hi)
		if a.hi-a.lo >= 0.005 {
			ch = fmt.Sprintf("%+.0f%% to %+.0f%%", 100*a.lo, 100*a.hi)
		}
		out = append(out, fmt.Sprintf("%s %s in %s", shortName(n), ch, plural(a.n, "benchmark", "benchmarks")))
	}
	return listed(out, 4)
}

// nearMisses names the functions that came closest to failing by the
// gate's own measure: near misses, smallest q first.
func nearMisses(funcs []*diff.Report) string {
	type miss struct {
		name, bench string
		rel, q      float64
	}
	var ms []miss
	for _, r := range funcs {
		for _, row := range r.NearMisses() {
			ms = append(ms, miss{row.Name, r.Name, row.Relative, row.Q})
		}
	}
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Or(cmp.Compare(a.q, b.q), strings.Compare(a.name, b.name)) })
	var out []string
	for _, m := range ms {
		_, b, _ := strings.Cut(m.bench, " ")
		out = append(out, fmt.Sprintf("%s %+.1f%% in %s (q=%.2g, not significant)", shortName(m.name), 100*m.rel, b, m.q))
	}
	return listed(out, 2)
}

// listed joins the first n of items and says how many more there are.
func listed(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// writeFunctionsShort writes the functions' section without the full
// tables: a line per benchmark, and under each that failed or came close
// the functions judged regressed and the near misses, with their shares.
func writeFunctionsShort(w io.Writer, funcs []*diff.Report) {
	for _, r := range ordered(funcs) {
		fmt.Fprintf(w, "  %s: %s\n", textfmt.Name(r.Name), textfmt.Line(r.Summary()))
		for _, row := range r.Rows {
			if row.Verdict != diff.Regressed && row.NearMiss == "" {
				continue
			}
			what := string(row.Verdict)
			if row.NearMiss != "" {
				what = "near miss"
			}
			fmt.Fprintf(w, "      %-9s %s %+.1f%% (q=%.2g)\n", what, textfmt.Name(row.Name), 100*row.Relative, row.Q)
		}
	}
}

// writeBenchesShort writes the benchmark results that changed, a line
// each, and how many did not; the whole table is --full's.
func writeBenchesShort(w io.Writer, benches *bench.Report) {
	same := 0
	for _, r := range benches.Rows {
		if r.Verdict == diff.Unchanged {
			same++
			continue
		}
		p := fmt.Sprintf("p=%.2g", r.P)
		if r.Test == diff.TestExact {
			p = "exact"
		}
		fmt.Fprintf(w, "  %-9s %s %s: %s (%s)\n", r.Verdict, textfmt.Name(r.Name), textfmt.Name(r.Unit), relText(r), p)
	}
	fmt.Fprintf(w, "  %d of %d results unchanged\n", same, len(benches.Rows))
}

// relText is a benchmark result's change.
func relText(r bench.Row) string {
	switch r.Verdict {
	case diff.New, diff.Gone:
		return string(r.Verdict)
	}
	return fmt.Sprintf("%+.1f%%", 100*r.Relative)
}
