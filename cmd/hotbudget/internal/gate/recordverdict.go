package gate

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
	if s := slowerPrograms(funcs); s != "" {
		// diff.Report.Failed counts it, and the summary calls the
		// benchmark regressed: so does the gate.
		reasons = append(reasons, "the program's time: "+s)
	}
	if rows := benches.Regressions(); len(rows) > 0 {
		var names []string
		for _, r := range rows {
			names = append(names, fmt.Sprintf("%s %s %+.1f%%", r.Name, r.Unit, 100*r.Relative))
		}
		reasons = append(reasons, "benchmark results: "+textfmt.List(names, 4))
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
		reasons = append(reasons, "allocations per op: "+textfmt.List(al, 4))
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
	return textfmt.List(byFunction(funcs, func(row diff.Row) bool { return row.Verdict == diff.Regressed }), 4)
}

// slowerPrograms names the benchmarks whose whole program's time per unit
// of work (the headline) was judged regressed, with its change.
func slowerPrograms(funcs []*diff.Report) string {
	var out []string
	for _, r := range funcs {
		if h := r.Headline; h.Verdict == diff.Regressed {
			out = append(out, fmt.Sprintf("%s %+.1f%% per %s (p=%.2g)", benchName(r.Name, funcs), 100*h.Relative, h.Per, h.P))
		}
	}
	return textfmt.List(out, 4)
}

// byFunction names the rows pick chooses, each function once, with the
// range of its changes and in how many benchmarks: the most benchmarks
// first.
func byFunction(funcs []*diff.Report, pick func(diff.Row) bool) []string {
	type agg struct {
		lo, hi float64
		n      int
	}
	by := map[string]*agg{}
	for _, r := range funcs {
		for _, row := range r.Rows {
			if !pick(row) {
				continue
			}
			a := by[row.Name]
			if a == nil {
				a = &agg{lo: row.Relative, hi: row.Relative}
				by[row.Name] = a
			}
			a.lo, a.hi = min(a.lo, row.Relative), max(a.hi, row.Relative)
			a.n++
		}
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
	return out
}

// ungatedChange is a function outside the gate (the runtime's, the
// standard library's) whose change was significant: shown, never failing.
func ungatedChange(row diff.Row) bool { return row.Ungated && row.NearMiss != "" }

// gatedNearMiss is a function of the gate that came close to failing.
func gatedNearMiss(row diff.Row) bool { return !row.Ungated && row.NearMiss != "" }

// missWhy is how the short reports label a gated near miss and why it
// did not fail: not significant, or time that moved into it from work the
// change removed (diff.MovedIn).
func missWhy(row diff.Row) (what, why string) {
	if m := row.MovedIn; m != nil {
		per := textfmt.Name(m.Per)
		return "moved in", fmt.Sprintf("q=%.2g; %s more an %s (%+.0f%%) while the %s got %s faster (%+.0f%%): time moved into it, not failed",
			row.Q, textfmt.Nanos(m.Head-m.Base), per, 100*(m.Head/m.Base-1), per, textfmt.Nanos(m.WholeBase-m.WholeHead), 100*(m.WholeHead/m.WholeBase-1))
	}
	return "near miss", fmt.Sprintf("q=%.2g, not significant", row.Q)
}

// flaggedBench reports whether a benchmark's functions regressed or came
// close: what the short reports give lines of their own.
func flaggedBench(r *diff.Report) bool {
	return r.Failed() || slices.ContainsFunc(r.Rows, gatedNearMiss)
}

// nearMisses names the functions that came closest to failing by the
// gate's own measure: near misses, smallest q first.
func nearMisses(funcs []*diff.Report) string {
	type miss struct {
		name, bench, why string
		rel, q           float64
	}
	var ms []miss
	for _, r := range funcs {
		for _, row := range r.Rows {
			// A function outside the gate never fails: it is not
			// close to failing, and its q is significant.
			if gatedNearMiss(row) {
				_, why := missWhy(row)
				ms = append(ms, miss{row.Name, r.Name, why, row.Relative, row.Q})
			}
		}
	}
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Or(cmp.Compare(a.q, b.q), strings.Compare(a.name, b.name)) })
	var out []string
	for _, m := range ms {
		_, b, _ := strings.Cut(m.bench, " ")
		out = append(out, fmt.Sprintf("%s %+.1f%% in %s (%s)", shortName(m.name), 100*m.rel, b, m.why))
	}
	return textfmt.List(out, 2)
}

// writeFunctionsShort writes the functions' section without the full
// tables: a line per benchmark that failed or came close, under it the
// functions judged regressed and the near misses; a line for the other
// benchmarks; and a line for the functions outside the gate that changed
// significantly (shown, never failing), each once.
func writeFunctionsShort(w io.Writer, funcs []*diff.Report) {
	var quiet []string
	for _, r := range ordered(funcs) {
		if !flaggedBench(r) {
			quiet = append(quiet, textfmt.Name(benchName(r.Name, funcs)))
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", textfmt.Name(r.Name), textfmt.Line(summaryOf(r)))
		for _, row := range flaggedRows(r) {
			what, q := string(row.Verdict), fmt.Sprintf("q=%.2g", row.Q)
			if row.NearMiss != "" {
				what, q = missWhy(row)
			}
			fmt.Fprintf(w, "      %-9s %s %+.1f%% (%s)\n", what, textfmt.Name(row.Name), 100*row.Relative, q)
		}
	}
	if len(quiet) > 0 {
		fmt.Fprintf(w, "  no regression and no near miss in %s: %s\n", plural(len(quiet), "benchmark", "benchmarks"), textfmt.List(quiet, 4))
	}
	if out := byFunction(funcs, ungatedChange); len(out) > 0 {
		fmt.Fprintf(w, "  outside the gate, changed significantly (shown, never failing): %s\n", textfmt.Line(textfmt.List(out, 4)))
	}
}

// flaggedRows are a report's rows that the short reports list: the
// functions judged regressed, then the near misses of the gate.
func flaggedRows(r *diff.Report) []diff.Row {
	var out []diff.Row
	for _, row := range r.Rows {
		if row.Verdict == diff.Regressed {
			out = append(out, row)
		}
	}
	for _, row := range r.Rows {
		if gatedNearMiss(row) {
			out = append(out, row)
		}
	}
	return out
}

// benchName is a benchmark's name without its package when every
// benchmark is of one package.
func benchName(name string, funcs []*diff.Report) string {
	pkg, b, ok := strings.Cut(name, " ")
	if !ok {
		return name
	}
	for _, r := range funcs {
		if p, _, _ := strings.Cut(r.Name, " "); p != pkg {
			return name
		}
	}
	return b
}

// writeAllocsShort writes the allocation reports of the benchmarks whose
// functions allocate more; the summary line says the rest.
func writeAllocsShort(w io.Writer, reps []*diff.AllocReport) error {
	var failed []*diff.AllocReport
	for _, r := range reps {
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	return writeAllocsText(w, failed)
}

// writeRecordMarkdownShort writes the short Markdown comment below its
// title: a table of the functions flagged, a line for the other
// benchmarks, the allocation reports that failed, the benchmark results
// that changed, and the verdict again last.
func writeRecordMarkdownShort(w io.Writer, res *Measurement, verdict string, funcs []*diff.Report, benches *bench.Report, allocs []*diff.AllocReport) error {
	fmt.Fprintf(w, "**Functions' CPU time** (%s → %s, each function's share of its benchmark's profiles, one false-discovery control over all): %s\n\n",
		textfmt.MarkdownEscape(res.baseRev.String()), textfmt.MarkdownEscape(res.headRev.String()), textfmt.MarkdownEscape(recordSummary(funcs)))
	var quiet []string
	header := false
	for _, r := range ordered(funcs) {
		rows := flaggedRows(r)
		if !flaggedBench(r) {
			quiet = append(quiet, textfmt.MarkdownCode(benchName(r.Name, funcs)))
			continue
		}
		if !header {
			fmt.Fprintf(w, "| benchmark | function | %s | q | verdict |\n|:--|:--|--:|--:|:--|\n", textfmt.MarkdownEscape(r.ChangeHeader()))
			header = true
		}
		for _, row := range rows {
			what := string(row.Verdict)
			if row.NearMiss != "" {
				w, why := missWhy(row)
				what = w + " (" + why + ")"
				if row.MovedIn == nil {
					what = "near miss (not significant)"
				}
			}
			fmt.Fprintf(w, "| %s | %s | %+.1f%% | %.2g | %s |\n", textfmt.MarkdownCode(benchName(r.Name, funcs)), textfmt.MarkdownCode(row.Name), 100*row.Relative, row.Q, textfmt.MarkdownEscape(what))
		}
	}
	if header {
		fmt.Fprintln(w)
	}
	if len(quiet) > 0 {
		fmt.Fprintf(w, "No regression and no near miss in %s: %s.\n\n", plural(len(quiet), "benchmark", "benchmarks"), textfmt.List(quiet, 4))
	}
	if out := byFunction(funcs, ungatedChange); len(out) > 0 {
		fmt.Fprintf(w, "Outside the gate, changed significantly (shown, never failing): %s.\n\n", textfmt.MarkdownEscape(textfmt.List(out, 4)))
	}
	if len(allocs) > 0 {
		fmt.Fprintf(w, "%s\n\n", textfmt.MarkdownEscape(allocsSummary(allocs)))
		for _, r := range orderedAllocs(allocs) {
			if !r.Failed() {
				continue
			}
			fmt.Fprintf(w, "#### %s\n\n", textfmt.MarkdownCode(r.Name))
			if err := r.Write(w, "markdown"); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "**Benchmark results** (the whole benchmark's time, bytes and allocations per op, as benchstat judges them): ")
	same := 0
	var changed []bench.Row
	for _, r := range benches.Rows {
		if r.Verdict == diff.Unchanged {
			same++
			continue
		}
		changed = append(changed, r)
	}
	fmt.Fprintf(w, "%d of %d results unchanged.\n\n", same, len(benches.Rows))
	if len(res.timeShown) > 0 {
		fmt.Fprintf(w, "%s\n\n", textfmt.MarkdownEscape(timeShownLine(res.timeShown)))
	}
	if len(changed) > 0 {
		fmt.Fprintf(w, "| benchmark | unit | change | p | verdict |\n|:--|:--|--:|--:|:--|\n")
		for _, r := range changed {
			p := fmt.Sprintf("%.2g", r.P)
			if r.Test == "exact" {
				p = "exact"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", textfmt.MarkdownCode(r.Name), textfmt.MarkdownEscape(r.Unit), relText(r), p, r.Verdict)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "Every table: `hotbudget record --full`")
	if res.out != "" {
		fmt.Fprintf(w, "; every profile: %s", textfmt.MarkdownCode(res.out))
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintf(w, "%s\n", textfmt.MarkdownEscape(verdict))
	return nil
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
		if r.Test == "exact" {
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
