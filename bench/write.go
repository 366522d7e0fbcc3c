package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"golang.org/x/perf/benchunit"
)

// bench's reports: names laid out by what varies, cells with their spread,
// the geomean rows, and the text, Markdown, JSON and HTML writers. Every
// name, unit and configuration value comes from the benchmark output, text
// of the change under test: the writers make it safe for a terminal, for
// Markdown and for HTML.

// layout splits the rows' configuration keys into those every row
// shares with one value (printed once) and those that vary (a column).
func layout(rows []Row) (common, vary []string) {
	keys := configKeys(func() []map[string]string {
		ms := make([]map[string]string, len(rows))
		for i, r := range rows {
			ms[i] = r.Config
		}
		return ms
	}()...)
	for _, k := range keys {
		same := true
		for _, r := range rows {
			if v, ok := r.Config[k]; !ok || v != rows[0].Config[k] {
				same = false
				break
			}
		}
		if same {
			common = append(common, k)
		} else {
			vary = append(vary, k)
		}
	}
	return common, vary
}

// benchName names a benchmark in a summary: its full name, with its unit
// if unit is set, and its package and the keys that tell it apart from
// other rows, as "Parse-2 sec/op (example.com/app, goarch=arm64)".
//
// Every part comes from the benchmark output and is shortened to
// textfmt.MaxName characters; the writers escape the whole.
func resultName(row Row, vary []string, unit bool) string {
	short := func(s string) string { return textfmt.Shorten(s, textfmt.MaxName) }
	name := short(row.Name)
	if unit {
		name += " " + short(row.Unit)
	}
	var extra []string
	if p := row.Config["pkg"]; p != "" {
		extra = append(extra, short(p))
	}
	for _, k := range vary {
		if k != "pkg" && row.Config[k] != "" {
			extra = append(extra, short(k)+"="+short(row.Config[k]))
		}
	}
	if len(extra) == 0 {
		return name
	}
	return name + " (" + strings.Join(extra, ", ") + ")"
}

func (r *Report) describe() string {
	test := "Mann-Whitney U"
	switch r.Settings.Assume {
	case diff.AssumeNormal:
		test = "Welch's t-test (runs assumed normal)"
	case diff.AssumeModel:
		test = "Mann-Whitney U as benchstat (no noise model is learned across benchmarks)"
	}
	return fmt.Sprintf("medians over runs per benchmark and unit; %s; false-discovery rate %g; minimum change %.0f%%",
		test, r.Settings.Alpha, r.Settings.MinRelative*100)
}

func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// cell is a median with benchstat's ±, "49.58µ sec/op ± 80%", scaled
// as benchstat scales a row: both sides with the prefix that suits the
// smaller. With too few runs for a confidence interval (benchstat's
// "± ∞") it gives their range instead, "49.58µ sec/op (41.20µ to 60.01µ)",
// or the median alone when the runs agree to the digits shown.
func cell(row Row, v Stats, present bool) string {
	if !present {
		return "-"
	}
	var vals []float64
	if row.Verdict != diff.New {
		vals = append(vals, row.Base.Median)
	}
	if row.Verdict != diff.Gone {
		vals = append(vals, row.Head.Median)
	}
	sc := benchunit.CommonScale(vals, benchunit.ClassOf(row.Unit))
	s := sc.Format(v.Median) + " " + textfmt.Name(row.Unit)
	if !math.IsInf(v.CI.Lo, 0) && !math.IsInf(v.CI.Hi, 0) {
		return s + " ± " + spread(v.Median, v.CI)
	}
	// Too few runs for an interval (benchstat's "± ∞"): their range is
	// what they can say, when it shows at the row's precision.
	if lo, hi := sc.Format(v.Min), sc.Format(v.Max); lo != hi {
		return s + " (" + lo + " to " + hi + ")"
	}
	return s
}

func baseCell(row Row) string {
	return cell(row, row.Base, row.Verdict != diff.New)
}

func headCell(row Row) string {
	return cell(row, row.Head, row.Verdict != diff.Gone)
}

// change is a result's change as benchstat prints it: the change of
// the medians, two decimals, whatever direction is better.
func change(row Row) string {
	switch {
	case row.Verdict == diff.New:
		return "new"
	case row.Verdict == diff.Gone:
		return "gone"
	case row.Base.Median == 0 && row.Head.Median == 0:
		return "~"
	case row.Base.Median == 0:
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", row.Relative*100)
}

// geomeanCells are the base, head and change cells of a geomean row.
func geomeanCells(g Geomean) (base, head, change string) {
	val := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return benchunit.Scale(v, benchunit.ClassOf(g.Unit)) + " " + textfmt.Name(g.Unit)
	}
	change = "?"
	if g.RatioOK {
		change = fmt.Sprintf("%+.2f%%", g.Relative*100)
	}
	return val(g.Base), val(g.Head), change
}

func (r *Report) summary(vary []string) string {
	c := r.Counts()
	if c[diff.Regressed] == 0 {
		return fmt.Sprintf("no regression among %d benchmark results (%d improved, %d new, %d gone)",
			len(r.Rows), c[diff.Improved], c[diff.New], c[diff.Gone])
	}
	var names []string
	for _, row := range r.Regressions() {
		names = append(names, resultName(row, vary, true))
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return fmt.Sprintf("%d of %d benchmark results regressed: %s", c[diff.Regressed], len(r.Rows), strings.Join(names, ", "))
}

// writeText writes a benchstat-like table: the sides' runs, what was
// compared, the warnings, the configuration every benchmark shares printed
// once, as benchstat does, then a row per result with a column for each
// configuration key that varies (pkg, with several packages), the geomean
// rows, and a summary line.
func (r *Report) writeText(w io.Writer) error {
	common, vary := layout(r.Rows)
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s\nhead: %s\n", runsText(r.BaseRuns), runsText(r.HeadRuns))
	fmt.Fprintln(&b, "compared:", r.describe())
	for _, warn := range r.Warnings {
		fmt.Fprintln(&b, "warning:", textfmt.Line(warn))
	}
	for _, k := range common {
		fmt.Fprintf(&b, "%s: %s\n", textfmt.Name(k), textfmt.Name(r.Rows[0].Config[k]))
	}
	fmt.Fprintln(&b)
	// The configuration columns and the name are left-aligned in one
	// last cell; tabwriter right-aligns the numbers before it.
	width := make([]int, len(vary))
	for i, k := range vary {
		width[i] = len(textfmt.Name(k))
		for _, row := range r.Rows {
			width[i] = max(width[i], len(textfmt.Name(row.Config[k])))
		}
	}
	label := func(cells []string, name string) string {
		var l strings.Builder
		for i, c := range cells {
			fmt.Fprintf(&l, "%-*s  ", width[i], textfmt.Name(c))
		}
		return l.String() + textfmt.Name(name)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "base\thead\tchange\tp\tverdict\t\t%s\n", label(vary, "benchmark"))
	for _, row := range r.Rows {
		cells := make([]string, len(vary))
		for i, k := range vary {
			cells[i] = row.Config[k]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", baseCell(row), headCell(row),
			change(row), pString(row), row.Verdict, label(cells, row.Name))
	}
	for _, g := range r.Geomeans {
		cells := make([]string, len(vary))
		for i, k := range vary {
			cells[i] = g.Config[k]
		}
		base, head, change := geomeanCells(g)
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t%s\n", base, head, change, label(cells, "geomean "+g.Unit))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range r.Geomeans {
		for _, warn := range g.Warnings {
			if strings.HasPrefix(warn, "benchmark set differs") {
				fmt.Fprintf(&b, "geomean %s: %s\n", textfmt.Name(g.Unit), textfmt.Line(warn))
			}
		}
	}
	for _, row := range r.Rows {
		for _, warn := range row.Warnings {
			if row.Verdict != diff.Unchanged {
				fmt.Fprintf(&b, "%s: %s\n", textfmt.Line(resultName(row, vary, true)), textfmt.Line(warn))
			}
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, textfmt.Line(r.summary(vary)))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdown writes the report for a pull-request comment: a headline,
// the table of the results that changed and the unchanged ones folded
// away, and the geomeans. Names appear only in code spans, at most
// textfmt.MaxName characters each, and the report is cut to
// textfmt.MaxMarkdown bytes.
func (r *Report) writeMarkdown(w io.Writer) error {
	common, vary := layout(r.Rows)
	var b strings.Builder
	icon := "✅"
	if len(r.Regressions()) > 0 {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s hotbudget bench: %s\n\n", icon, textfmt.MarkdownEscape(r.summary(vary)))
	fmt.Fprintf(&b, "Base: %s  \nHead: %s  \nCompared: %s.", runsText(r.BaseRuns), runsText(r.HeadRuns), r.describe())
	if len(common) > 0 {
		var cfg []string
		for _, k := range common {
			cfg = append(cfg, fmt.Sprintf("%s %s", k, textfmt.MarkdownCode(r.Rows[0].Config[k])))
		}
		fmt.Fprintf(&b, "  \nConfiguration: %s.", strings.Join(cfg, ", "))
	}
	fmt.Fprint(&b, "\n\n")
	textfmt.MarkdownWarnings(&b, r.Warnings)
	table := func(rows []Row) {
		fmt.Fprint(&b, "|")
		for _, k := range vary {
			fmt.Fprintf(&b, " %s |", textfmt.MarkdownEscape(k))
		}
		fmt.Fprintln(&b, " benchmark | base | head | change | p | verdict |")
		fmt.Fprintln(&b, "|"+strings.Repeat(":--|", len(vary))+":--|--:|--:|--:|--:|:--|")
		for _, row := range rows {
			fmt.Fprint(&b, "|")
			for _, k := range vary {
				fmt.Fprintf(&b, " %s |", textfmt.MarkdownCode(row.Config[k]))
			}
			// A unit is the benchmark's own (b.ReportMetric): escaped.
			md := row
			md.Unit = textfmt.MarkdownEscape(row.Unit)
			fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s |\n", textfmt.MarkdownCode(row.Name), baseCell(md),
				headCell(md), change(row), pString(row), row.Verdict)
		}
	}
	changed, same := splitChanged(r.Rows)
	if len(changed) > 0 {
		table(changed)
		fmt.Fprintln(&b)
	}
	textfmt.MarkdownFolded(&b, same, "unchanged benchmark results", "first", table)
	if len(r.Geomeans) > 0 {
		fmt.Fprint(&b, "\n|")
		for _, k := range vary {
			fmt.Fprintf(&b, " %s |", textfmt.MarkdownEscape(k))
		}
		fmt.Fprintln(&b, " geomean | base | head | change |")
		fmt.Fprintln(&b, "|"+strings.Repeat(":--|", len(vary))+":--|--:|--:|--:|")
		for _, g := range r.Geomeans {
			fmt.Fprint(&b, "|")
			for _, k := range vary {
				fmt.Fprintf(&b, " %s |", textfmt.MarkdownCode(g.Config[k]))
			}
			md := g
			md.Unit = textfmt.MarkdownEscape(g.Unit)
			base, head, change := geomeanCells(md)
			fmt.Fprintf(&b, " %s | %s | %s | %s |\n", md.Unit, base, head, change)
		}
	}
	_, err := io.WriteString(w, textfmt.LimitMarkdown(b.String(), textfmt.MaxMarkdown))
	return err
}

// jsonReport is the JSON schema of a benchmark report (schemaVersion).
type jsonReport struct {
	Schema      string          `json:"schema"`
	Assume      diff.Assumption `json:"assume"`
	Alpha       float64         `json:"alpha"`
	MinRelative float64         `json:"min_relative"`
	Ignore      []string        `json:"ignore"`
	Base        jsonSide        `json:"base"`
	Head        jsonSide        `json:"head"`
	Regressed   int             `json:"regressed"`
	Improved    int             `json:"improved"`
	New         int             `json:"new"`
	Gone        int             `json:"gone"`
	Benchmarks  []jsonItem      `json:"benchmarks"`
	Geomeans    []Geomean       `json:"geomeans"`
	Warnings    []string        `json:"warnings"`
}

type jsonSide struct {
	Runs int `json:"runs"`
}

type jsonItem struct {
	Name     string            `json:"name"`
	Package  string            `json:"package"`
	Config   map[string]string `json:"config"`
	Unit     string            `json:"unit"`
	Better   string            `json:"better"`
	Base     jsonValue         `json:"base"`
	Head     jsonValue         `json:"head"`
	Delta    float64           `json:"delta"`
	Relative float64           `json:"relative"`
	P        float64           `json:"p"`
	Q        float64           `json:"q"`
	Test     string            `json:"test"`
	Verdict  diff.Verdict      `json:"verdict"`
	Warnings []string          `json:"warnings"`
}

type jsonValue struct {
	Median float64  `json:"median"`
	Runs   int      `json:"runs"`
	CI     Interval `json:"ci"`
	Spread string   `json:"spread"`
}

// writeJSON writes the report as indented JSON in a stable schema
// (schemaVersion); non-finite numbers are written as 0:
//
//	{
//	  "schema": "hotbudget.bench/v2",
//	  "assume": "model" | "nothing" | "normal", // as chosen; model judges benchmarks as nothing does
//	  "alpha": 0.05,          // false-discovery rate across results
//	  "min_relative": 0.1,    // smallest relative change judged
//	  "ignore": ["cpu"],      // configuration keys ignored
//	  "base": {"runs": 10},   // most runs of any benchmark
//	  "head": {...},
//	  "regressed": 1, "improved": 0, "new": 0, "gone": 0,
//	  "benchmarks": [{
//	    "name": "Parse-2",    // full name, as benchstat's .fullname
//	    "package": "example.com/app",
//	    "config": {"goos": "linux", "goarch": "amd64", "pkg": "example.com/app", "cpu": "..."},
//	    "unit": "sec/op",     // tidied as benchstat does
//	    "better": "lower" | "higher", // higher for throughput (B/s)
//	    "base": {"median": 1e-6, "runs": 10,
//	             "ci": {"lo": 9e-7, "hi": 1.1e-6}, // 95% interval of the median
//	             "spread": "10%"},                // benchstat's ±
//	    "head": {...},
//	    "delta": head - base,
//	    "relative": head/base - 1, as benchstat shows it (1.03 = +103%,
//	                an improvement when "better" is "higher"),
//	    "p", "q", "test": "mann-whitney" | "welch-t" | "none",
//	    "verdict": "regressed" | "improved" | "unchanged" | "new" | "gone",
//	    "warnings": [...]
//	  }],
//	  "geomeans": [{"config": {...}, "unit": "sec/op", "benchmarks": 3,
//	                "base": 1e-6, "head": 1.2e-6, // geomeans of the medians
//	                "relative": 0.2, "ratio_ok": true, // geomean of head/base, less 1
//	                "warnings": [...]}],
//	  "warnings": [...]
//	}
//
// Version 2 changed "relative" and "delta" of higher-is-better units from
// worse-positive to the change of the values, as benchstat shows it, and
// added "better", "ci", "spread" and "geomeans".
func (r *Report) writeJSON(w io.Writer) error {
	c := r.Counts()
	out := jsonReport{
		Schema: schemaVersion, Assume: r.Settings.Assume, Alpha: r.Settings.Alpha, MinRelative: r.Settings.MinRelative,
		Ignore: append([]string{}, r.Settings.Ignore...),
		Base:   jsonSide{r.BaseRuns}, Head: jsonSide{r.HeadRuns},
		Regressed: c[diff.Regressed], Improved: c[diff.Improved], New: c[diff.New], Gone: c[diff.Gone],
		Benchmarks: make([]jsonItem, 0, len(r.Rows)),
		Geomeans:   append([]Geomean{}, r.Geomeans...),
		Warnings:   append([]string{}, r.Warnings...),
	}
	for _, row := range r.Rows {
		cfg := row.Config
		if cfg == nil {
			cfg = map[string]string{}
		}
		better := "lower"
		if row.HigherIsBetter {
			better = "higher"
		}
		value := func(v float64, n int, ci Interval, present bool) jsonValue {
			if !present {
				return jsonValue{}
			}
			return jsonValue{finite(v), n, Interval{finite(ci.Lo), finite(ci.Hi)}, spread(v, ci)}
		}
		out.Benchmarks = append(out.Benchmarks, jsonItem{
			Name: row.Name, Package: row.Config["pkg"], Config: cfg, Unit: row.Unit, Better: better,
			Base:  value(row.Base.Median, row.Base.Runs, row.Base.CI, row.Verdict != diff.New),
			Head:  value(row.Head.Median, row.Head.Runs, row.Head.CI, row.Verdict != diff.Gone),
			Delta: finite(row.Delta), Relative: finite(row.Relative), P: finite(row.P), Q: finite(row.Q),
			Test: row.Test, Verdict: row.Verdict, Warnings: append([]string{}, row.Warnings...),
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeHTML writes the report as one self-contained HTML page that works
// offline: the words, values and configuration of the text report, every result
// listed. A benchmark comparison has no flame graph.
func (r *Report) writeHTML(w io.Writer) error {
	common, vary := layout(r.Rows)
	page := &htmlreport.Report{
		Title:     "hotbudget bench",
		Headline:  r.summary(vary),
		Status:    "pass",
		Details:   []string{"base: " + runsText(r.BaseRuns), "head: " + runsText(r.HeadRuns), "compared: " + r.describe()},
		Warnings:  r.Warnings,
		Generator: "written by hotbudget bench",
	}
	for _, k := range common {
		page.Details = append(page.Details, k+": "+r.Rows[0].Config[k])
	}
	if r.Failed() {
		page.Status = "fail"
	}
	page.Table = htmlreport.Table{
		Columns:    []string{"benchmark", "base", "head", "change", "p", "verdict"},
		NameColumn: -1, // no flame graph to search
		Numeric:    []bool{false, true, true, true, true, false},
	}
	for _, row := range r.Rows {
		// The configuration that tells rows apart (the rest is in the
		// details), as the text report's columns.
		name := row.Name
		if len(vary) > 0 {
			cfg := make([]string, len(vary))
			for i, k := range vary {
				cfg[i] = k + "=" + row.Config[k]
			}
			name += " (" + strings.Join(cfg, ", ") + ")"
		}
		page.Table.Rows = append(page.Table.Rows, htmlreport.Row{
			Cells: []string{name, baseCell(row), headCell(row),
				change(row), pString(row), string(row.Verdict)},
			Verdict: string(row.Verdict),
		})
	}
	for _, g := range r.Geomeans {
		name := "geomean " + g.Unit
		if len(vary) > 0 {
			cfg := make([]string, len(vary))
			for i, k := range vary {
				cfg[i] = k + "=" + g.Config[k]
			}
			name += " (" + strings.Join(cfg, ", ") + ")"
		}
		base, head, change := geomeanCells(g)
		page.Table.Rows = append(page.Table.Rows, htmlreport.Row{Cells: []string{name, base, head, change, "-", ""}})
	}
	return htmlreport.Write(w, page)
}

// pString is a result's p column: "-" untested, "exact" for a count
// judged exactly, else the p-value as diff's reports write it.
func pString(row Row) string {
	switch row.Test {
	case "none":
		return "-"
	case "exact":
		return "exact"
	}
	if row.P < 1e-15 {
		return "p<1e-15"
	}
	return fmt.Sprintf("p=%.3g", row.P)
}

// splitChanged splits rows into those with a verdict other than unchanged
// and the unchanged ones.
func splitChanged(rows []Row) (changed, same []Row) {
	for _, row := range rows {
		if row.Verdict != diff.Unchanged {
			changed = append(changed, row)
		} else {
			same = append(same, row)
		}
	}
	return changed, same
}

// finite is x, or 0 when x is not a finite number (JSON has none).
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// Write writes the report to w in format: "text" (a benchstat-like table),
// "markdown" (a pull-request comment), "json" (indented JSON in a stable
// schema) or "html" (one self-contained page). Any other format is an
// error naming these.
func (r *Report) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
		{"html", r.writeHTML},
	}.Write(w, "bench.Report", format)
}
