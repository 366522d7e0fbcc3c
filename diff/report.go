package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchunit"
)

// SchemaVersion names the JSON report's schema. It changes only when a field
// changes meaning or goes away; new fields may be added.
const SchemaVersion = "hotbudget.diff/v1"

// jsonReport is the JSON schema written by WriteJSON:
//
//	{
//	  "schema": "hotbudget.diff/v1",
//	  "metric": "self" | "total",
//	  "mode": "share" | "absolute" | "per-op",
//	  "key": "name" | "name+file" | "name+file+line",
//	  "assume": "nothing" | "normal", // the test for several runs a side
//	  "anchor": "pkg.F",          // per-op mode with an anchor only
//	  "alpha": 0.05,              // false-discovery rate across functions
//	  "min_relative": 0.1,        // smallest relative change judged
//	  "min_absolute_ns": 1000000, // smallest time change (absolute, per-op)
//	  "min_share": 0.005,         // smallest share change (share, anchor)
//	  "base": {"runs", "total_ns", "samples", "exact", "period_ns"},
//	  "head": {...},
//	  "regressed": 1, "improved": 0, "new": 0, "gone": 0,
//	  "functions": [{
//	    "name", "file",
//	    "base": {"self_ns", "total_ns", "self_share", "total_share", "samples", "metric"},
//	    "head": {...},
//	    "delta": head.metric - scale*base.metric (ns, ns per op, or share 0..1),
//	    "relative": relative change (0.2 = +20%; 0 for new and gone),
//	    "p": p-value, "q": FDR-adjusted p-value (1 when not tested or below the minimum effect),
//	    "test": "sampling" | "mann-whitney" | "welch-t" | "exact" | "none",
//	    "scale": how much the rest of the profile's shares moved (share mode; else 1),
//	    "verdict": "regressed" | "improved" | "unchanged" | "new" | "gone",
//	    "warnings": [...],
//	    "explain": {             // regressed and improved functions only (Explanation)
//	      "by": "callers" | "callees", // self time split over callers, total time over callees
//	      "delta": the paths' deltas summed (means over runs),
//	      "summary": "+21.0% of the +23.5% comes through A → B → f; the path C → f is unchanged",
//	      "paths": [{            // largest change first; at most four
//	        "path": ["A", "B", "f"] (callers: outermost first) | ["f", "g"] (callees); [] for others,
//	        "end": true,         // the path is the whole stack on its open side (omitted when false)
//	        "others": 3,         // this entry sums that many paths (omitted when 0)
//	        "base", "head": the path's metric (medians over runs, as the function's),
//	        "delta": head - scale*base of the means, "relative": as the function's,
//	        "share": delta / explain.delta,
//	        "p", "q": q adjusted over the function's paths, "test",
//	        "verdict": "regressed" | "improved" | "unchanged"
//	      }]
//	    }
//	  }],
//	  "warnings": [...]
//	}
//
// Functions come in the order of the text report: regressions by size of
// change, improvements, new, gone, then unchanged functions by size.
type jsonReport struct {
	Schema      string     `json:"schema"`
	Metric      Metric     `json:"metric"`
	Mode        Mode       `json:"mode"`
	Key         Key        `json:"key"`
	Assume      Assumption `json:"assume"`
	Anchor      string     `json:"anchor,omitempty"`
	Alpha       float64    `json:"alpha"`
	MinRelative float64    `json:"min_relative"`
	MinAbsolute int64      `json:"min_absolute_ns"`
	MinShare    float64    `json:"min_share"`
	Base        Side       `json:"base"`
	Head        Side       `json:"head"`
	Regressed   int        `json:"regressed"`
	Improved    int        `json:"improved"`
	New         int        `json:"new"`
	Gone        int        `json:"gone"`
	Functions   []Row      `json:"functions"`
	Warnings    []string   `json:"warnings"`
}

// Counts returns how many rows have each verdict.
func (r *Report) Counts() map[Verdict]int {
	c := map[Verdict]int{}
	for _, row := range r.Rows {
		c[row.Verdict]++
	}
	return c
}

// WriteJSON writes the report as indented JSON in a stable schema
// (SchemaVersion; fields may be added, none changes meaning or goes away
// without a new version). Rows come in the order of Rows: regressions
// first, largest change first. Non-finite numbers are written as 0.
//
//	{
//	  "schema": "hotbudget.diff/v1",
//	  "metric": "self" | "total",
//	  "mode": "share" | "absolute" | "per-op",
//	  "key": "name" | "name+file" | "name+file+line",
//	  "assume": "nothing" | "normal", // the test for several runs a side
//	  "anchor": "pkg.F",          // per-op mode with an anchor only
//	  "alpha": 0.05,              // false-discovery rate across functions
//	  "min_relative": 0.1,        // smallest relative change judged
//	  "min_absolute_ns": 1000000, // smallest time change (absolute, per-op)
//	  "min_share": 0.005,         // smallest share change (share, anchor)
//	  "base": {"runs", "total_ns", "samples", "exact", "period_ns"},
//	  "head": {...},
//	  "regressed": 1, "improved": 0, "new": 0, "gone": 0,
//	  "functions": [{
//	    "name", "file",
//	    "base": {"self_ns", "total_ns", "self_share", "total_share", "samples", "metric"},
//	    "head": {...},
//	    "delta": head.metric - scale*base.metric (ns, ns per op, or share 0..1),
//	    "relative": relative change (0.2 = +20%; 0 for new and gone),
//	    "p": p-value, "q": FDR-adjusted p-value (1 when not tested or below the minimum effect),
//	    "test": "sampling" | "mann-whitney" | "welch-t" | "exact" | "none",
//	    "scale": how much the rest of the profile's shares moved (share mode; else 1),
//	    "verdict": "regressed" | "improved" | "unchanged" | "new" | "gone",
//	    "warnings": [...],
//	    "explain": {             // regressed and improved functions only (Explanation)
//	      "by": "callers" | "callees", // self time split over callers, total time over callees
//	      "delta": the paths' deltas summed (means over runs),
//	      "summary": "+21.0% of the +23.5% comes through A → B → f; the path C → f is unchanged",
//	      "paths": [{            // largest change first; at most four
//	        "path": ["A", "B", "f"] (callers: outermost first) | ["f", "g"] (callees); [] for others,
//	        "end": true,         // the path is the whole stack on its open side (omitted when false)
//	        "others": 3,         // this entry sums that many paths (omitted when 0)
//	        "base", "head": the path's metric (medians over runs, as the function's),
//	        "delta": head - scale*base of the means, "relative": as the function's,
//	        "share": delta / explain.delta,
//	        "p", "q": q adjusted over the function's paths, "test",
//	        "verdict": "regressed" | "improved" | "unchanged"
//	      }]
//	    }
//	  }],
//	  "warnings": [...]
//	}
//
// Example: testdata/diff/regress.json.
func (r *Report) WriteJSON(w io.Writer) error {
	c := r.Counts()
	rows := make([]Row, len(r.Rows))
	for i, row := range r.Rows {
		row.Delta, row.Relative, row.P, row.Q = finite(row.Delta), finite(row.Relative), finite(row.P), finite(row.Q)
		row.Base.Metric, row.Head.Metric = finite(row.Base.Metric), finite(row.Head.Metric)
		if row.Warnings == nil {
			row.Warnings = []string{}
		}
		row.Explain = row.Explain.finite()
		rows[i] = row
	}
	warn := r.Warnings
	if warn == nil {
		warn = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{
		Schema: SchemaVersion, Metric: r.Settings.Metric, Mode: r.Settings.Mode, Key: r.Settings.Key,
		Assume: r.Settings.Assume, Anchor: r.Settings.Anchor, Alpha: r.Settings.Alpha, MinRelative: r.Settings.MinRelative,
		MinAbsolute: int64(r.Settings.MinAbsolute), MinShare: r.Settings.MinShare,
		Base: r.Base, Head: r.Head,
		Regressed: c[Regressed], Improved: c[Improved], New: c[New], Gone: c[Gone],
		Functions: rows, Warnings: warn,
	})
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// describe says in words what was compared.
func (r *Report) describe() string {
	s := r.Settings
	test := "Mann-Whitney U"
	if s.Assume == AssumeNormal {
		test = "Welch's t-test (runs assumed normal)"
	}
	if r.bench {
		return fmt.Sprintf("medians over runs per benchmark and unit; %s; false-discovery rate %g; minimum change %.0f%%",
			test, s.Alpha, s.MinRelative*100)
	}
	var what string
	switch s.Mode {
	case Share:
		what = fmt.Sprintf("%s time as share of the profile", s.Metric)
	case Absolute:
		what = fmt.Sprintf("%s time per run", s.Metric)
	case PerOp:
		if s.Anchor != "" {
			what = fmt.Sprintf("%s time per unit of %s's total time", s.Metric, s.Anchor)
		} else {
			what = fmt.Sprintf("%s time per operation", s.Metric)
		}
	}
	minAbs := fmt.Sprintf("%.1f share points", s.MinShare*100)
	if s.Mode == Absolute || (s.Mode == PerOp && s.Anchor == "") {
		minAbs = s.MinAbsolute.String()
	}
	if s.Assume == AssumeNormal && r.Base.Runs >= 2 && r.Head.Runs >= 2 {
		what += "; runs compared by " + test
	}
	return fmt.Sprintf("%s; functions matched by %s; false-discovery rate %g; minimum change %.0f%% and %s",
		what, s.Key, s.Alpha, s.MinRelative*100, minAbs)
}

func (r *Report) sideLine(name string, sd Side) string {
	if r.bench {
		return fmt.Sprintf("%s: %d runs", name, sd.Runs)
	}
	kind := "sampled"
	if sd.Exact {
		kind = "exact"
	} else if sd.Period > 0 {
		kind = "sampled every " + sd.Period.String()
	}
	runs := "1 run"
	if sd.Runs != 1 {
		runs = fmt.Sprintf("%d runs", sd.Runs)
	}
	return fmt.Sprintf("%s: %s, %v total per run, %d samples (%s)", name, runs, sd.Total.Round(10*time.Microsecond), sd.Samples, kind)
}

// formatMetric renders a normalised metric value of row in its unit.
func (r *Report) formatMetric(row Row, v float64) string {
	s := r.Settings
	switch {
	case r.bench:
		return benchunit.Scale(v, benchunit.ClassOf(row.File)) + " " + row.File
	case s.Mode == Share:
		return fmt.Sprintf("%.2f%%", v*100)
	case s.Mode == PerOp && s.Anchor != "":
		return fmt.Sprintf("%.3fx", v)
	case s.Mode == PerOp:
		return fmtDuration(time.Duration(v))
	}
	return fmtDuration(time.Duration(v))
}

func fmtDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Millisecond == 0 || d >= 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(10 * time.Nanosecond).String()
}

func (r *Report) change(row Row) string {
	switch {
	case row.Verdict == New:
		return "new"
	case row.Verdict == Gone:
		return "gone"
	case row.Base.Metric == 0 || row.Head.Metric == 0:
		return "~"
	}
	return fmt.Sprintf("%+.1f%%", row.Relative*100)
}

func pString(row Row) string {
	if row.Test == "none" {
		return "-"
	}
	return fmt.Sprintf("p=%.3g", row.P)
}

// summary is one line: what needs attention.
func (r *Report) summary() string {
	c := r.Counts()
	noun := "functions"
	if r.bench {
		noun = "benchmark results"
	}
	if c[Regressed] == 0 {
		return fmt.Sprintf("no regression among %d %s (%d improved, %d new, %d gone)",
			len(r.Rows), noun, c[Improved], c[New], c[Gone])
	}
	names := make([]string, 0, c[Regressed])
	for _, row := range r.Regressions() {
		names = append(names, row.Name)
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return fmt.Sprintf("%d of %d %s regressed: %s", c[Regressed], len(r.Rows), noun, strings.Join(names, ", "))
}

// WriteText writes a benchstat-like table: a header saying which side is
// which and what was compared, then one line per function, regressions
// first. Functions unchanged below 0.1% of the profile (in Share mode) are
// summarised in one line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, r.sideLine("base", r.Base))
	fmt.Fprintln(&b, r.sideLine("head", r.Head))
	fmt.Fprintln(&b, "compared:", r.describe())
	for _, warn := range r.Warnings {
		fmt.Fprintln(&b, "warning:", warn)
	}
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.bench {
		fmt.Fprintln(tw, "base\thead\tchange\tp\tverdict\t\tbenchmark")
	} else {
		fmt.Fprintln(tw, "base\thead\tchange\tp\tverdict\t\tfunction")
	}
	hidden := 0
	for _, row := range r.Rows {
		if r.hide(row) {
			hidden++
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", r.formatMetric(row, row.Base.Metric), r.formatMetric(row, row.Head.Metric),
			r.change(row), pString(row), row.Verdict, row.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d unchanged functions below 0.1%% of both sides, or absent from most runs, not shown)\n", hidden)
	}
	for _, row := range r.Rows {
		for _, warn := range row.Warnings {
			if row.Verdict != Unchanged {
				fmt.Fprintf(&b, "%s: %s\n", row.Name, warn)
			}
		}
	}
	if err := r.writeExplanations(&b); err != nil {
		return err
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, r.summary())
	_, err := io.WriteString(w, b.String())
	return err
}

// hide reports whether an unchanged row is too small to show.
func (r *Report) hide(row Row) bool {
	if row.Verdict != Unchanged || r.bench {
		return false
	}
	if row.Base.Metric == 0 && row.Head.Metric == 0 {
		return true // absent from most runs of both sides
	}
	small := func(v Value) bool {
		if r.Settings.Metric == Total {
			return v.TotalShare < 0.001
		}
		return v.SelfShare < 0.001
	}
	return small(row.Base) && small(row.Head)
}

// WriteMarkdown writes a report for a pull-request comment: a headline, a
// table of the functions that changed, and the unchanged ones folded away.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	c := r.Counts()
	icon := "✅"
	if c[Regressed] > 0 {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s hotbudget diff: %s\n\n", icon, r.summary())
	fmt.Fprintf(&b, "%s  \n%s  \nCompared: %s.\n\n", r.sideLine("Base", r.Base), r.sideLine("Head", r.Head), r.describe())
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "> ⚠️ %s\n", mdEscape(warn))
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(&b)
	}
	table := func(rows []Row) {
		fmt.Fprintln(&b, "| function | base | head | change | p | verdict |")
		fmt.Fprintln(&b, "|:--|--:|--:|--:|--:|:--|")
		for _, row := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", mdCode(row.Name), r.formatMetric(row, row.Base.Metric),
				r.formatMetric(row, row.Head.Metric), r.change(row), pString(row), row.Verdict)
		}
	}
	var changed, same []Row
	for _, row := range r.Rows {
		if row.Verdict == Unchanged {
			if !r.hide(row) {
				same = append(same, row)
			}
		} else {
			changed = append(changed, row)
		}
	}
	if len(changed) > 0 {
		table(changed)
		fmt.Fprintln(&b)
		r.writeMarkdownExplanations(&b)
	}
	if len(same) > 0 {
		const maxRows = 50
		more := ""
		if len(same) > maxRows {
			more = fmt.Sprintf(", largest %d shown", maxRows)
			same = same[:maxRows]
		}
		fmt.Fprintf(&b, "<details><summary>%d unchanged functions%s</summary>\n\n", len(same), more)
		table(same)
		fmt.Fprintln(&b, "\n</details>")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`).Replace(s)
}
