// Package tables writes hotbudget top's reports of one profile's
// functions: text, Markdown, JSON and HTML, every name through the
// escaping of internal/textfmt.
package tables

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Top is top's report of one profile: its table, the rows shown, the lines
// under its header, and (for HTML) the index and options the flame graph
// is drawn from; Difference marks a difference of counts (record's
// *.instructions-diff.pb.gz), drawn as a table alone.
type Top struct {
	Path       string
	Notes      []string
	Table      *analysis.Table
	Shown      []analysis.Function
	Index      *analysis.Index
	Options    []analysis.Option
	Difference bool
}

// Write writes the report in format: json, markdown, html or text.
func (r *Top) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		return writeTopJSON(w, r.Table, r.Shown)
	case "markdown":
		return writeTopMarkdown(w, r.Path, r.Notes, r.Table, r.Shown)
	case "html":
		if r.Difference {
			return writeDifferenceHTML(w, r.Path, r.Notes, r.Table, r.Shown)
		}
		return writeTopHTML(w, r.Path, r.Notes, r.Index, r.Options, r.Table, r.Shown)
	}
	writeTopText(w, r.Path, r.Notes, r.Table, r.Shown)
	return nil
}

// topSchema names the JSON output's schema: v1, unversioned, named each
// value's key after its unit (total_ns, self_bytes, ...); v2 writes every
// value under one key and its unit once, in "unit".
const topSchema = "hotbudget.top/v2"

// JSON is top's JSON output: values in the table's unit, named once.
type JSON struct {
	Schema     string     `json:"schema"`
	Unit       string     `json:"unit"`
	SampleType string     `json:"sample_type"`
	Total      int64      `json:"total"`
	Functions  []Function `json:"functions"`
}

// Function is one row of top's JSON; Self and Total are in its unit.
type Function struct {
	Name         string `json:"name"`
	File         string `json:"file"`
	Line         int64  `json:"line"`
	Column       int64  `json:"column"`
	Self         int64  `json:"self"`
	Total        int64  `json:"total"`
	SelfSamples  int64  `json:"self_samples"`
	TotalSamples int64  `json:"total_samples"`
}

func writeTopJSON(w io.Writer, t *analysis.Table, shown []analysis.Function) error {
	out := JSON{Schema: topSchema, Unit: t.Unit, SampleType: t.SampleType, Total: t.Total,
		Functions: make([]Function, 0, len(shown))}
	for _, f := range shown {
		out.Functions = append(out.Functions, Function{
			Name: f.Name, File: f.File, Line: f.Line, Column: f.Column,
			Self: f.Self, Total: f.Total,
			SelfSamples: f.SelfSamples, TotalSamples: f.TotalSamples,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// displayNames names each shown row, adding file:line where several rows
// share a name (anonymous JavaScript functions in different files).
func displayNames(t *analysis.Table, shown []analysis.Function) []string {
	count := make(map[string]int)
	for _, f := range t.Functions {
		count[f.Name]++
	}
	names := make([]string, len(shown))
	for i, f := range shown {
		names[i] = textfmt.Shorten(f.Name, textfmt.MaxName)
		if count[f.Name] > 1 {
			names[i] += " " + textfmt.Shorten(location(f.File, f.Line), textfmt.MaxName)
		}
	}
	return names
}

func location(file string, line int64) string {
	if file == "" {
		return ""
	}
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// topHeader is the lines above top's table: the file, the sample type,
// the total, notes (a difference of counts, per op) and what the shown
// functions account for.
func topHeader(path string, notes []string, t *analysis.Table, shown []analysis.Function) []string {
	lines := []string{"File: " + path, "Type: " + t.SampleType}
	kind := "sampled"
	switch {
	case t.Exact && t.Unit == analysis.UnitCount:
		kind = "exact counts"
	case t.Exact:
		kind = "exact durations"
	case t.Period > 0:
		kind += ", period " + textfmt.Duration(t.Period)
	case t.SampleBytes == 1:
		kind = "every allocation recorded"
	case t.SampleBytes > 1:
		kind += " every " + textfmt.Bytes(float64(t.SampleBytes)) + " allocated"
	}
	total := fmt.Sprintf("Total: %s (%s)", t.Format(t.Total), kind)
	if t.Unit == analysis.UnitCount {
		total = fmt.Sprintf("Total: %s %s (%s)", t.Format(t.Total), countNoun(t), kind)
	}
	if t.Duration > 0 {
		total = fmt.Sprintf("Duration: %s, %s", textfmt.Duration(t.Duration), total)
	}
	lines = append(lines, total)
	lines = append(lines, notes...)
	var sum float64
	for _, f := range shown {
		sum += float64(f.Self)
	}
	share := 0.0
	if t.Total > 0 {
		share = sum / float64(t.Total)
	}
	what := "self time"
	switch t.Unit {
	case analysis.UnitBytes:
		what = "self bytes"
	case analysis.UnitCount:
		what = "self " + countNoun(t)
	}
	lines = append(lines, fmt.Sprintf("Showing top %d functions out of %d, accounting for %s of %s",
		len(shown), len(t.Functions), textfmt.Percent(share), what))
	return lines
}

// countNoun is what a table of counts counts: "objects" for Go's
// alloc_objects and inuse_objects, the event of exact counts
// ("instructions", "cycles": callgrind's and perfassert's), else "samples"
// or "events".
func countNoun(t *analysis.Table) string {
	typ, _, _ := strings.Cut(t.SampleType, "/")
	switch {
	case strings.HasSuffix(typ, "objects"):
		return "objects"
	case typ == "samples":
		return "samples"
	case typ == "instructions", t.Exact && typ != "" && textfmt.Line(typ) == typ && len(typ) <= 40:
		return typ
	}
	return "events"
}

func writeTopText(w io.Writer, path string, notes []string, t *analysis.Table, shown []analysis.Function) {
	for _, l := range topHeader(path, notes, t, shown) {
		fmt.Fprintln(w, textfmt.Line(l))
	}
	fmt.Fprintf(w, "%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "name")
	names := displayNames(t, shown)
	var sum float64
	for i, f := range shown {
		sum += f.SelfShare
		fmt.Fprintf(w, "%10s %7s %7s %10s %7s  %s\n", t.Format(f.Self), textfmt.Percent(f.SelfShare), textfmt.Percent(sum),
			t.Format(f.Total), textfmt.Percent(f.TotalShare), textfmt.Term(names[i]))
	}
}

// writeTopMarkdown writes the table for Markdown: names in code spans,
// file names and the sample type escaped, at most textfmt.MaxMarkdown
// bytes.
func writeTopMarkdown(out io.Writer, path string, notes []string, t *analysis.Table, shown []analysis.Function) error {
	hdr := topHeader(path, notes, t, shown)
	var w strings.Builder
	fmt.Fprintf(&w, "#### %s\n\n", textfmt.MarkdownCode(path))
	for _, l := range hdr[1:] {
		fmt.Fprintf(&w, "%s  \n", textfmt.MarkdownEscape(l))
	}
	fmt.Fprint(&w, "\n| flat | flat% | sum% | cum | cum% | function | location |\n|---:|---:|---:|---:|---:|---|---|\n")
	var sum float64
	for _, f := range shown {
		sum += f.SelfShare
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %s | %s |\n", t.Format(f.Self), textfmt.Percent(f.SelfShare), textfmt.Percent(sum),
			t.Format(f.Total), textfmt.Percent(f.TotalShare), textfmt.MarkdownCode(f.Name),
			textfmt.MarkdownEscape(textfmt.Shorten(location(f.File, f.Line), textfmt.MaxName)))
	}
	_, err := io.WriteString(out, textfmt.LimitMarkdown(w.String(), textfmt.MaxMarkdown))
	return err
}

// PerOp is a line giving the total of a table of exact counts per op or
// iteration, when the profile's record (rec, ok: meta.Known) says how many
// it counts ("" otherwise).
func PerOp(rec meta.Record, ok bool, t *analysis.Table) string {
	if !ok || !t.Exact || t.Unit != analysis.UnitCount {
		return ""
	}
	var work float64
	for _, r := range rec.Runs {
		work += r.Work
	}
	if !(work > 0) {
		return ""
	}
	unit := "op"
	if rec.WorkUnit == meta.WorkIteration {
		unit = "iteration"
	}
	return fmt.Sprintf("Per %s: %s %s over %s %ss", unit, textfmt.Count(math.Round(float64(t.Total)/work)), countNoun(t), textfmt.Count(work), unit)
}

// writeDifferenceHTML writes the table of a difference of counts as a
// page: no flame graph, whose widths cannot be negative.
func writeDifferenceHTML(w io.Writer, path string, notes []string, t *analysis.Table, shown []analysis.Function) error {
	hdr := topHeader(path, notes, t, shown)
	page := &htmlreport.Report{
		Title:     "hotbudget top",
		Headline:  path,
		Status:    "info",
		Details:   append(hdr[1:], "No flame graph: a difference has counts below zero."),
		Warnings:  t.Warnings,
		Generator: "written by hotbudget top",
		Table: htmlreport.Table{
			Columns:    []string{"function", "flat", "flat%", "sum%", "cum", "cum%", "location"},
			NameColumn: -1,
			Numeric:    []bool{false, true, true, true, true, true, false},
		},
	}
	var sum float64
	for _, f := range shown {
		sum += f.SelfShare
		page.Table.Rows = append(page.Table.Rows, htmlreport.Row{
			Cells: []string{f.Name, t.Format(f.Self), textfmt.Percent(f.SelfShare), textfmt.Percent(sum),
				t.Format(f.Total), textfmt.Percent(f.TotalShare), location(f.File, f.Line)},
			Verdict: "unchanged",
		})
	}
	if n := len(t.Functions) - len(shown); n > 0 {
		page.Table.Note = fmt.Sprintf("%d more functions not shown (-n 0 shows all)", n)
	}
	return htmlreport.Write(w, page)
}

// topMaxNodes bounds the flame graph's frames (htmlreport.TreeBuilder.Tree).
const topMaxNodes = 100000

// writeTopHTML writes one profile as a self-contained HTML page: the
// header of the text report, a flame graph of every selected sample (width
// is total time as a share of the profile) and the table of the shown
// functions.
func writeTopHTML(w io.Writer, path string, notes []string, x *analysis.Index, aopts []analysis.Option, t *analysis.Table, shown []analysis.Function) error {
	_, stacks, err := x.Stacks(aopts...)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	b := htmlreport.NewTreeBuilder("all")
	ids := make([]int32, len(t.Functions))
	for i := range t.Functions {
		ids[i] = b.Name(t.Functions[i].Name)
	}
	total := float64(t.Total)
	if total <= 0 {
		total = 1
	}
	var frames []int32
	for _, s := range stacks {
		frames = frames[:0]
		for k := len(s.Frames) - 1; k >= 0; k-- {
			frames = append(frames, ids[s.Frames[k]])
		}
		b.Add(1, frames, float64(s.Value)/total)
	}
	tree := b.Tree(topMaxNodes, nil)
	tree.Unit, tree.Metric = "share", "total"
	hdr := topHeader(path, notes, t, shown)
	page := &htmlreport.Report{
		Title:     "hotbudget top",
		Headline:  path,
		Status:    "info",
		Details:   hdr[1:],
		Warnings:  t.Warnings,
		Tree:      tree,
		Generator: "written by hotbudget top",
		Table: htmlreport.Table{
			Columns:    []string{"function", "flat", "flat%", "sum%", "cum", "cum%", "location"},
			NameColumn: 0,
			Numeric:    []bool{false, true, true, true, true, true, false},
		},
	}
	var sum float64
	for _, f := range shown {
		sum += f.SelfShare
		page.Table.Rows = append(page.Table.Rows, htmlreport.Row{
			Cells: []string{f.Name, t.Format(f.Self), textfmt.Percent(f.SelfShare), textfmt.Percent(math.Min(sum, 1)),
				t.Format(f.Total), textfmt.Percent(f.TotalShare), location(f.File, f.Line)},
			Verdict: "unchanged",
		})
	}
	if n := len(t.Functions) - len(shown); n > 0 {
		page.Table.Note = fmt.Sprintf("%d more functions not shown (-n 0 shows all)", n)
	}
	return htmlreport.Write(w, page)
}
