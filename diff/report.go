package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// schemaVersion names the JSON report's schema. It changes only when a field
// changes meaning or goes away; new fields may be added.
const schemaVersion = "hotbudget.diff/v3"

// jsonReport is what Write(w, "json") writes; its doc comment has the schema.
type jsonReport struct {
	Schema      string            `json:"schema"`
	Name        string            `json:"name,omitempty"`
	Metric      Metric            `json:"metric"`
	Mode        Mode              `json:"mode"`
	Key         Key               `json:"key"`
	Assume      Assumption        `json:"assume"`
	Anchor      string            `json:"anchor,omitempty"`
	Alpha       float64           `json:"alpha"`
	MinRelative float64           `json:"min_relative"`
	MinAbsolute int64             `json:"min_absolute_ns"`
	MinShare    float64           `json:"min_share"`
	SameWork    bool              `json:"same_work"`
	Rename      map[string]string `json:"rename,omitempty"`
	Base        Side              `json:"base"`
	Head        Side              `json:"head"`
	Headline    Headline          `json:"headline"`
	Noise       Noise             `json:"noise"`
	Failed      bool              `json:"failed"`
	Regressed   int               `json:"regressed"`
	Improved    int               `json:"improved"`
	New         int               `json:"new"`
	Gone        int               `json:"gone"`
	NearMisses  int               `json:"near_misses"`
	Judged      int               `json:"judged"`
	Functions   []Row             `json:"functions"`
	Warnings    []string          `json:"warnings"`
}

// Counts returns how many rows have each verdict.
func (r *Report) Counts() map[Verdict]int {
	c := map[Verdict]int{}
	for _, row := range r.Rows {
		c[row.Verdict]++
	}
	return c
}

// writeJSON writes the report as indented JSON in a stable schema
// (schemaVersion; fields may be added, none changes meaning or goes away
// without a new version). Rows come in the order of Rows: regressions
// first, largest change first. Non-finite numbers are written as 0.
//
//	{
//	  "schema": "hotbudget.diff/v3",
//	  "name": "PKG BenchmarkX",   // one of several judged together (CompareEach; omitted otherwise)
//	  "metric": "self" | "total",
//	  "mode": "share" | "absolute" | "per-op", // PerAnchor: "per-op" with an anchor
//	  "key": "name" | "name+file" | "name+file+line",
//	  "assume": "model" | "nothing" | "normal", // the test for several runs a side
//	  "anchor": "pkg.F",          // PerAnchor mode only
//	  "alpha": 0.05,              // false-discovery rate across functions
//	  "min_relative": 0.1,        // smallest relative change judged
//	  "min_absolute_ns": 1000000, // smallest time change (absolute, per-op; values that are not times: none)
//	  "min_share": 0.005,         // smallest share change (share, anchor)
//	  "same_work": false,         // every run declared to do the same work
//	  "rename": {"old": "new"},   // WithRename's pairs (omitted when none)
//	  "base": {"runs", "processes", "total", "samples", "exact", "period_ns", "unit"}, // processes: true when runs counts processes
//	          // unit: what total and every function's self and total count: "ns", "bytes" or "count"
//	  "head": {...},
//	  "headline": {               // the whole program's time per unit of work
//	    "judged": true, "reason": "why not judged",
//	    "per": "iteration" | "op" | "run" | ...,
//	    "base", "head", "relative", "p", "test", // base, head: in the sides' unit
//	    "verdict": "regressed" | "improved" | "unchanged",
//	    "min_detectable": 0.06, "runs_needed": 4
//	  },
//	  "noise": {"source": "runs" | "pair" | "whole" | "floor", "dispersion", "functions",
//	            "residual_df", "prior_df" (-1: infinite), "outliers",
//	            "whole_dispersion": the whole profile's (omitted when unknown)},
//	  "failed": true,             // the gate's answer: a regression or a headline regression
//	  "regressed": 1, "improved": 0, "new": 0, "gone": 0,
//	  "near_misses": 1,           // rows with a near_miss: they never fail the gate
//	  "judged": 4,                // functions judged (Report.Judged): the counts' denominator
//	  "functions": [{
//	    "name", "file",
//	    "renamed_from": ["old"],  // base names matched by a rename (omitted when none)
//	    "base": {"self", "total", "self_share", "total_share", "samples", "metric"}, // self, total: in base.unit
//	            // self_share, total_share: the function's mean time over the side's mean
//	            // total, the shares the text shows (pprof -top of the side's profiles merged)
//	    "head": {...},
//	    "delta": head.metric - base.metric (the unit, the unit per op, or share 0..1),
//	    "relative": head.metric/base.metric - 1 (0.2 = +20%; 0 for new and gone),
//	    "p": one-sided p-value in the direction of the change,
//	    "q": FDR-adjusted p (1 when not tested or below the minimum effect),
//	    "test": "moderated-t" | "pair-t" | "exact" | "exact-t" | "mann-whitney" | "welch-t" | "presence" | "none",
//	    "scale": how much the rest of the profile's shares moved (share mode; else 1),
//	    "min_detectable": smallest slowdown these runs detect (0.12 = +12%; 0 untested),
//	    "runs_needed": runs a side that detect min_relative (0 untested),
//	    "verdict": "regressed" | "improved" | "unchanged" | "new" | "gone",
//	    "ungated": true,         // outside the gated functions (WithGate): never fails (omitted when false)
//	    "near_miss": "why",      // suspicious, not failing (omitted when not)
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
// Values carry their unit: a time profile's are nanoseconds, a heap or
// allocation profile's bytes or objects, an instruction profile's
// instructions, all under the same keys, and base and head say which in
// "unit": "ns", "bytes" or "count". Only period_ns and min_absolute_ns,
// always times, name their unit in the key.
//
// v3 differs from v2 in the keys of values alone: base and head's
// "total_ns", the functions' "self_ns" and "total_ns" and the headline's
// "base_ns" and "head_ns" are "total", "self", "total", "base" and "head"
// in every unit, where v2 renamed them "_bytes" or "_count" for a heap or
// allocation profile; "min_absolute_ns" and "period_ns" are no longer
// renamed. v2 differs from v1: p is one-sided; base and head metrics are
// the fitted values whose ratio is relative; headline, noise, failed,
// same_work, min_detectable and runs_needed are new. Example:
// testdata/diff/regress.json.
func (r *Report) writeJSON(w io.Writer) error {
	c := r.Counts()
	rows := make([]Row, len(r.Rows))
	for i, row := range r.Rows {
		row.Delta, row.Relative, row.P, row.Q = finite(row.Delta), finite(row.Relative), finite(row.P), finite(row.Q)
		row.Base.Metric, row.Head.Metric = finite(row.Base.Metric), finite(row.Head.Metric)
		// The shares every writer shows (shownValues).
		row.Base.SelfShare, row.Base.TotalShare = r.shownShare(Value{Self: row.Base.Self}, r.Base), r.shownShare(Value{Total: row.Base.Total}, r.Base)
		row.Head.SelfShare, row.Head.TotalShare = r.shownShare(Value{Self: row.Head.Self}, r.Head), r.shownShare(Value{Total: row.Head.Total}, r.Head)
		row.MinDetectable = finite(row.MinDetectable)
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
		Schema: schemaVersion, Name: r.Name, Metric: r.Settings.Metric, Mode: jsonMode(r.Settings.Mode), Key: r.Settings.Key,
		Assume: r.Settings.Assume, Anchor: r.Settings.Anchor, Alpha: r.Settings.Alpha, MinRelative: r.Settings.MinRelative,
		MinAbsolute: int64(r.Settings.MinAbsolute), MinShare: r.Settings.MinShare,
		SameWork: r.Settings.SameWork, Rename: r.Settings.Rename, Base: r.Base, Head: r.Head,
		Headline: finiteHeadline(r.Headline), Noise: r.Noise, Failed: r.Failed(),
		Regressed: c[Regressed], Improved: c[Improved], New: c[New], Gone: c[Gone], NearMisses: len(r.nearMisses()), Judged: r.Judged(),
		Functions: rows, Warnings: warn,
	})
}

// jsonMode is a mode as the schema names it: PerAnchor is "per-op" with an
// "anchor", as it was before it had a Mode of its own.
func jsonMode(m Mode) Mode {
	if m == PerAnchor {
		return PerOp
	}
	return m
}

func finiteHeadline(h Headline) Headline {
	h.Base, h.Head, h.Relative, h.P, h.MinDetectable = finite(h.Base), finite(h.Head), finite(h.Relative), finite(h.P), finite(h.MinDetectable)
	return h
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
	switch s.Assume {
	case AssumeNormal:
		test = "Welch's t-test (runs assumed normal)"
	case AssumeModel:
		test = "moderated t (run-to-run noise learned across functions)"
	}
	var what string
	q := quantity(unitOf(r.Base))
	switch s.Mode {
	case Share:
		what = fmt.Sprintf("%s %s as share of the profile", s.Metric, q)
	case Absolute:
		what = fmt.Sprintf("%s %s per run", s.Metric, q)
	case PerAnchor:
		what = fmt.Sprintf("%s %s per unit of %s's total %s", s.Metric, q, s.Anchor, q)
	case PerOp:
		what = fmt.Sprintf("%s %s per operation", s.Metric, q)
	}
	minAbs := fmt.Sprintf("%.1f share points", s.MinShare*100)
	if s.Mode == Absolute || s.Mode == PerOp {
		minAbs = r.fmtValue(float64(s.MinAbsolute))
	}
	if s.Assume != AssumeModel && r.Base.Runs >= 2 && r.Head.Runs >= 2 {
		what += "; runs compared by " + test
	}
	return fmt.Sprintf("%s; functions matched by %s; false-discovery rate %g; minimum change %.0f%% and %s",
		what, s.Key, s.Alpha, s.MinRelative*100, minAbs)
}

// writeRegressions writes the text report with its regressed rows only,
// the counts still those of the whole report (perfassert's failure text).
func (r *Report) writeRegressions(w io.Writer) error {
	only := *r
	only.judged, only.judgedSet = r.Judged(), true
	only.Rows = r.Regressions()
	return only.writeText(w)
}

// summaryLine is the report's last line: what needs attention, names made
// safe for a terminal (textfmt.Name).
func (r *Report) summaryLine() string { return r.summary(textfmt.Name) }

// summary is one line: what needs attention, each name written by name
// (textfmt.Name for text, textfmt.MarkdownCode for Markdown).
func (r *Report) summary(name func(string) string) string {
	c := r.Counts()
	var line string
	judged := r.Judged()
	if c[Regressed] == 0 {
		line = fmt.Sprintf("no regression among %d functions judged of %d compared (%d improved, %d new, %d gone)",
			judged, len(r.Rows), c[Improved], c[New], c[Gone])
	} else {
		names := make([]string, 0, c[Regressed])
		for _, row := range r.Regressions() {
			names = append(names, name(row.Name))
		}
		if len(names) > 3 {
			names = append(names[:3], "...")
		}
		line = fmt.Sprintf("%d of %d functions judged regressed: %s", c[Regressed], judged, strings.Join(names, ", "))
	}
	if r.Headline.Verdict == Regressed {
		prefix := fmt.Sprintf("the program's time per %s regressed %+.1f%%", name(r.Headline.Per), 100*r.Headline.Relative)
		if c[Regressed] == 0 {
			return prefix + "; " + strings.Replace(line, "no regression among", "no single function regressed among", 1)
		}
		return prefix + "; " + line
	}
	return line
}

// writeText writes a benchstat-like table: a header saying which side is
// which and what was compared, then one line per function, regressions
// first. Functions unchanged below 0.1% of the profile (in Share mode) are
// summarised in one line.
func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, r.sideLine("base", r.Base))
	fmt.Fprintln(&b, r.sideLine("head", r.Head))
	fmt.Fprintln(&b, "compared:", r.describe())
	if l := r.changeLegend(); l != "" {
		fmt.Fprintln(&b, "columns:", l)
	}
	if r.showNoise() { // one run a side: a warning says it
		fmt.Fprintln(&b, "noise:", r.noiseLine())
	}
	fmt.Fprintln(&b, "headline:", r.Headline.text())
	for _, warn := range r.Warnings {
		fmt.Fprintln(&b, "warning:", textfmt.Line(warn))
	}
	for _, row := range r.nearMisses() {
		fmt.Fprintf(&b, "near miss (does not fail the gate): %s: %s\n", textfmt.Name(row.Name), textfmt.Line(row.NearMiss))
	}
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "base\thead\t%s\tp\tverdict\t\tfunction\n", r.ChangeHeader())
	hidden := 0
	for _, row := range r.Rows {
		if r.hide(row) {
			hidden++
			continue
		}
		f := r.Figures(row)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", f.Base, f.Head, f.Change, f.P, row.Verdict, row.label(textfmt.Name))
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
				fmt.Fprintf(&b, "%s: %s\n", textfmt.Name(row.Name), textfmt.Line(warn))
			}
		}
	}
	if err := r.writeExplanations(&b); err != nil {
		return err
	}
	if lines := r.powerLines(textfmt.Name); len(lines) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, powerHeader+":")
		for _, l := range lines {
			fmt.Fprintln(&b, "  "+l)
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, r.summary(textfmt.Name))
	_, err := io.WriteString(w, b.String())
	return err
}

// hide reports whether an unchanged row is too small to show.
func (r *Report) hide(row Row) bool {
	if row.Verdict != Unchanged {
		return false
	}
	if row.Base.Metric == 0 && row.Head.Metric == 0 {
		return true // absent from most runs of both sides
	}
	// The shares the columns show (shownShare), in every mode.
	return r.shownShare(row.Base, r.Base) < 0.001 && r.shownShare(row.Head, r.Head) < 0.001
}

// writeMarkdown writes a report for a pull-request comment: a headline, a
// table of the functions that changed, and the unchanged ones folded away.
// Names from the profiles appear only in code spans, at most
// textfmt.MaxName characters each, and the report is cut to
// textfmt.MaxMarkdown bytes (under GitHub's limit on a comment), saying
// what was left out.
func (r *Report) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	c := r.Counts()
	icon := "✅"
	if c[Regressed] > 0 || r.Headline.Verdict == Regressed {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s hotbudget diff: %s\n\n", icon, r.summary(textfmt.MarkdownCode))
	fmt.Fprintf(&b, "%s  \n%s  \nCompared: %s.", r.sideLine("Base", r.Base), r.sideLine("Head", r.Head), textfmt.MarkdownEscape(r.describe()))
	if l := r.changeLegend(); l != "" {
		fmt.Fprintf(&b, "  \nColumns: %s.", textfmt.MarkdownEscape(l))
	}
	if r.showNoise() {
		fmt.Fprintf(&b, "  \nNoise: %s.", textfmt.MarkdownEscape(r.noiseLine()))
	}
	fmt.Fprintf(&b, "  \n**Whole program:** %s", textfmt.MarkdownEscape(r.Headline.text()))
	fmt.Fprint(&b, "\n\n")
	textfmt.MarkdownWarnings(&b, r.Warnings)
	if nm := r.nearMisses(); len(nm) > 0 {
		for _, row := range nm {
			fmt.Fprintf(&b, "> 🔶 **Near miss** (does not fail the gate): %s: %s\n", textfmt.MarkdownCode(row.Name), textfmt.MarkdownEscape(row.NearMiss))
		}
		fmt.Fprintln(&b)
	}
	table := func(rows []Row) {
		fmt.Fprintf(&b, "| function | base | head | %s | p | verdict |\n", r.ChangeHeader())
		fmt.Fprintln(&b, "|:--|--:|--:|--:|--:|:--|")
		for _, row := range rows {
			f := r.Figures(row)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row.label(textfmt.MarkdownCode), f.Base, f.Head, f.Change, f.P, row.Verdict)
		}
	}
	changed, same := splitChanged(r.Rows, r.hide)
	if len(changed) > 0 {
		table(changed)
		fmt.Fprintln(&b)
		r.writeMarkdownExplanations(&b)
	}
	if lines := r.powerLines(textfmt.Name); len(lines) > 0 {
		fmt.Fprintln(&b, "**Power** ("+strings.TrimPrefix(powerHeader, "power (")+":")
		fmt.Fprintln(&b)
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", textfmt.MarkdownEscape(l))
		}
		fmt.Fprintln(&b)
	}
	textfmt.MarkdownFolded(&b, same, "unchanged functions", "largest", table)
	_, err := io.WriteString(w, textfmt.LimitMarkdown(b.String(), textfmt.MaxMarkdown))
	return err
}

// splitChanged splits rows into those with a verdict other than unchanged
// and the unchanged ones, less those hide (when not nil) leaves out.
func splitChanged(rows []Row, hide func(Row) bool) (changed, same []Row) {
	for _, row := range rows {
		switch {
		case row.Verdict != Unchanged:
			changed = append(changed, row)
		case hide == nil || !hide(row):
			same = append(same, row)
		}
	}
	return changed, same
}

// label is a row's name as the tables show it, each name written by code:
// with the base names a rename matched it with ("p.new (was p.old)").
func (row *Row) label(code func(string) string) string {
	if len(row.RenamedFrom) == 0 {
		return code(row.Name)
	}
	was := make([]string, len(row.RenamedFrom))
	for i, n := range row.RenamedFrom {
		was[i] = code(n)
	}
	return code(row.Name) + " (was " + strings.Join(was, ", ") + ")"
}
