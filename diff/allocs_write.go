package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Writers of AllocReport: bytes and objects per unit of work, never times,
// and every report says its values are exact.

// allocRowsShown bounds the unchanged rows the writers list.
const allocRowsShown = 10

// summaryLine is the report's verdict in one line.
func (r *AllocReport) summaryLine() string {
	return r.summary(textfmt.Name)
}

func (r *AllocReport) summary(name func(string) string) string {
	what := "allocations per " + r.unitWord()
	if r.Name != "" {
		what = name(r.Name) + ": " + what
	}
	regs := r.Regressions()
	if len(regs) == 0 {
		return fmt.Sprintf("%s (exact): no function allocates more; all judged functions: %s -> %s", what, allocText(r.Base), allocText(r.Head))
	}
	names := make([]string, 0, 3)
	for i, row := range regs {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(regs)-3))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s -> %s)", name(row.Name), allocText(row.Base.Self), allocText(row.Head.Self)))
	}
	return fmt.Sprintf("%s (exact): %d %s allocate%s more: %s; all judged functions: %s -> %s", what, len(regs),
		plural(len(regs), "function", "functions"), map[bool]string{true: "s"}[len(regs) == 1],
		strings.Join(names, ", "), allocText(r.Base), allocText(r.Head))
}

func (r *AllocReport) unitWord() string {
	if r.Unit == "" {
		return "unit of work"
	}
	return r.Unit
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// allocText is "3 objects, 96B".
func allocText(c AllocCount) string {
	return textfmt.Count(round2(c.Objects)) + " " + objectsWord(round2(c.Objects)) + ", " + textfmt.Bytes(round2(c.Bytes))
}

// allocChange is "+1 object, +16B".
func allocChange(base, head AllocCount) string {
	d := AllocCount{Objects: round2(head.Objects - base.Objects), Bytes: round2(head.Bytes - base.Bytes)}
	sign := func(v float64) string {
		if v > 0 {
			return "+"
		}
		return ""
	}
	return sign(d.Objects) + textfmt.Count(d.Objects) + " " + objectsWord(d.Objects) + ", " + sign(d.Bytes) + textfmt.Bytes(d.Bytes)
}

func objectsWord(v float64) string {
	if v == 1 || v == -1 {
		return "object"
	}
	return "objects"
}

func round2(v float64) float64 {
	r := float64(int64(v*100+0.5*sign(v))) / 100
	if r == 0 {
		return 0 // no -0
	}
	return r
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// shown is the rows a report lists: every row not unchanged, and the
// first allocRowsShown unchanged ones (the heaviest, by how the rows are
// ordered); hidden is how many were left out.
func (r *AllocReport) shown() (rows []AllocRow, hidden int) {
	unchanged := 0
	for _, row := range r.Rows {
		if row.Verdict == Unchanged {
			if unchanged >= allocRowsShown {
				hidden++
				continue
			}
			unchanged++
		}
		rows = append(rows, row)
	}
	return rows, hidden
}

// tolText says the tolerance.
func (r *AllocReport) tolText() string {
	tol := r.Tolerance
	if tol.Counted {
		s := fmt.Sprintf("exact counts (every allocation counted under callgrind, tiny objects one by one), no statistics: a function regressed when its own allocations per %s grew", r.unitWord())
		if tol.Once.Objects > 0 && r.Work > 0 {
			s += fmt.Sprintf(" by more than %s objects over its %s %ss (what a process may allocate once)", strconv.FormatFloat(tol.Once.Objects, 'g', -1, 64), textfmt.Count(r.Work), r.unitWord())
		}
		if r.Base.Bytes == 0 && r.Head.Bytes == 0 {
			s += "; bytes not counted (an allocator's name gives no size for tiny objects, nor for any object before go1.27's size-specialised allocators)"
		}
		return s
	}
	s := fmt.Sprintf("exact counts (runtime.MemProfileRate = 1), no statistics: a function regressed when its own allocations per %s grew by more than %s objects or more than %s bytes (or %.3g%% of them)",
		r.unitWord(), strconv.FormatFloat(tol.Objects, 'g', -1, 64), strconv.FormatFloat(tol.Bytes, 'g', -1, 64), 100*tol.Relative)
	if tol.Once != (AllocCount{}) && r.Work > 0 {
		s += fmt.Sprintf(", plus what a run may allocate once (%s objects, %s) over its %s %ss",
			strconv.FormatFloat(tol.Once.Objects, 'g', -1, 64), textfmt.Bytes(tol.Once.Bytes), textfmt.Count(r.Work), r.unitWord())
	}
	return s
}

// writeText writes the report as plain text: the verdict, the tolerance,
// and per function its self allocations per unit of work on both sides,
// with the lines whose allocations changed.
func (r *AllocReport) writeText(w io.Writer) error {
	var b bytes.Buffer
	g := textfmt.NewGuard(&b)
	fmt.Fprintln(g, r.summaryLine())
	fmt.Fprintln(g, r.tolText())
	rows, hidden := r.shown()
	for _, row := range rows {
		fmt.Fprintf(g, "  %-10s %s: self %s -> %s (%s); total %s -> %s\n", row.Verdict, textfmt.Name(row.Name),
			allocText(row.Base.Self), allocText(row.Head.Self), allocChange(row.Base.Self, row.Head.Self),
			allocText(row.Base.Total), allocText(row.Head.Total))
		if row.Verdict == Unchanged {
			continue
		}
		for _, l := range row.Lines {
			fmt.Fprintf(g, "      %s: %s -> %s (%s)\n", textfmt.Name(l.Line), allocText(l.Base), allocText(l.Head), allocChange(l.Base, l.Head))
		}
	}
	if hidden > 0 {
		fmt.Fprintf(g, "  (%d unchanged %s not shown)\n", hidden, plural(hidden, "function", "functions"))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(g, "note: %s\n", textfmt.Line(n))
	}
	if err := g.Flush(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeMarkdown writes the report as GitHub-flavoured Markdown: names in
// code spans, a table of the functions shown.
func (r *AllocReport) writeMarkdown(w io.Writer) error {
	var b bytes.Buffer
	g := textfmt.NewGuard(&b)
	status := "✅"
	if r.Failed() {
		status = "❌"
	}
	fmt.Fprintf(g, "%s %s\n\n", status, r.summary(textfmt.MarkdownCode))
	fmt.Fprintf(g, "%s\n\n", textfmt.MarkdownEscape(r.tolText()))
	rows, hidden := r.shown()
	if len(rows) > 0 {
		fmt.Fprintf(g, "| function | self base | self head | change | total head | verdict | lines |\n|---|---:|---:|---:|---:|---|---|\n")
		for _, row := range rows {
			var lines []string
			if row.Verdict != Unchanged {
				for _, l := range row.Lines {
					lines = append(lines, textfmt.MarkdownCode(l.Line)+" "+textfmt.MarkdownEscape(allocChange(l.Base, l.Head)))
				}
			}
			fmt.Fprintf(g, "| %s | %s | %s | %s | %s | %s | %s |\n", textfmt.MarkdownCode(row.Name),
				allocText(row.Base.Self), allocText(row.Head.Self), allocChange(row.Base.Self, row.Head.Self),
				allocText(row.Head.Total), row.Verdict, strings.Join(lines, "<br>"))
		}
	}
	if hidden > 0 {
		fmt.Fprintf(g, "\n%d unchanged %s not shown.\n", hidden, plural(hidden, "function", "functions"))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(g, "\nNote: %s\n", textfmt.MarkdownEscape(n))
	}
	if err := g.Flush(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeJSON writes the report as one JSON object (AllocReport's fields;
// "exact": true).
func (r *AllocReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeHTML writes the report as one self-contained HTML page: the
// verdict, the tolerance, the table of functions with their changed lines
// and, when the report was made by CompareAllocs, a differential flame
// graph of the bytes allocated per unit of work by call path.
func (r *AllocReport) writeHTML(w io.Writer) error {
	page := &htmlreport.Report{
		Title:     "hotbudget allocations",
		Headline:  r.summaryLine(),
		Status:    "pass",
		Details:   []string{r.tolText()},
		Warnings:  r.Notes,
		Generator: "written by hotbudget",
	}
	if r.Failed() {
		page.Status = "fail"
	}
	page.Table = htmlreport.Table{
		Columns:    []string{"function", "self base", "self head", "change", "total base", "total head", "verdict"},
		NameColumn: -1,
		Numeric:    []bool{false, true, true, true, true, true, false},
	}
	rows, hidden := r.shown()
	for _, row := range rows {
		hr := htmlreport.Row{
			Cells: []string{row.Name, allocText(row.Base.Self), allocText(row.Head.Self), allocChange(row.Base.Self, row.Head.Self),
				allocText(row.Base.Total), allocText(row.Head.Total), string(row.Verdict)},
			Verdict: string(row.Verdict),
		}
		if len(row.Lines) > 0 && row.Verdict != Unchanged {
			ex := &htmlreport.Explain{Summary: "lines whose allocations changed",
				Columns: []string{"line", "base", "head", "change"}}
			for _, l := range row.Lines {
				ex.Paths = append(ex.Paths, htmlreport.ExplainPath{Cells: []string{l.Line, allocText(l.Base), allocText(l.Head), allocChange(l.Base, l.Head)}})
			}
			hr.Explain = ex
		}
		page.Table.Rows = append(page.Table.Rows, hr)
	}
	if hidden > 0 {
		page.Table.Note = fmt.Sprintf("%d unchanged %s not shown", hidden, plural(hidden, "function", "functions"))
	}
	page.Tree = r.allocFlameTree()
	if page.Tree != nil {
		page.Details = append(page.Details, "flame graph: bytes allocated per "+r.unitWord()+" by call path (width), the change of each frame's bytes (colour)")
	}
	return htmlreport.Write(w, page)
}
