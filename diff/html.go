package diff

import (
	"fmt"
	"io"

	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// htmlMaxUnchanged bounds the unchanged functions the HTML table lists.
const htmlMaxUnchanged = 200

// writeHTML writes the report as one self-contained HTML page that works
// offline: the headline verdict, the table of verdicts with each changed
// function's explanation, and, for a Compare report, a differential flame
// graph of the two sides (width = time, colour = change of the compared
// metric, judged functions marked; click to zoom, search by name, hover for
// self, total, change and p). Every asset is embedded; the page fetches
// nothing.
func (r *Report) writeHTML(w io.Writer) error {
	page := &htmlreport.Report{
		Title:     "hotbudget diff",
		Headline:  r.htmlHeadline(),
		Status:    "pass",
		Details:   []string{r.sideLine("base", r.Base), r.sideLine("head", r.Head), "compared: " + r.describe()},
		Warnings:  r.Warnings,
		Generator: "written by hotbudget diff",
	}
	if l := r.changeLegend(); l != "" {
		page.Details = append(page.Details, "columns: "+l)
	}
	if r.showNoise() {
		page.Details = append(page.Details, "noise: "+r.noiseLine())
	}
	page.Details = append(page.Details, "whole program: "+r.Headline.text())
	for _, l := range r.powerLines(textfmt.Name) {
		page.Details = append(page.Details, "power: "+l)
	}
	if r.Failed() {
		page.Status = "fail"
	}
	const what = "function"
	page.Table = htmlreport.Table{
		Columns:    []string{what, "base", "head", r.ChangeHeader(), "p", "verdict"},
		NameColumn: 0,
		Numeric:    []bool{false, true, true, true, true, false},
	}
	if r.flame == nil {
		page.Table.NameColumn = -1 // no flame graph to search
	}
	hidden, unchanged := 0, 0
	for _, row := range r.Rows {
		if row.Verdict == Unchanged {
			if r.hide(row) || unchanged >= htmlMaxUnchanged {
				hidden++
				continue
			}
			unchanged++
		}
		f := r.Figures(row)
		hr := htmlreport.Row{
			Cells:   []string{row.Name, f.Base, f.Head, f.Change, f.P, string(row.Verdict)},
			Verdict: string(row.Verdict),
		}
		if ex := row.Explain; ex != nil {
			he := &htmlreport.Explain{Summary: ex.Summary,
				Columns: []string{ex.By[:len(ex.By)-1] + " path", "base", "head", r.pathHeader(), "of change", "p", "verdict"}}
			for _, pc := range ex.Paths {
				pb, ph := r.shownPath(pc)
				he.Paths = append(he.Paths, htmlreport.ExplainPath{
					Cells: []string{ex.describePath(pc), pb, ph,
						r.pathChange(pc), pct(contribution(&row, ex, pc)), fmt.Sprintf("p=%.3g", pc.P), string(pc.Verdict)},
					Verdict: string(pc.Verdict),
				})
			}
			hr.Explain = he
		}
		page.Table.Rows = append(page.Table.Rows, hr)
	}
	if hidden > 0 {
		page.Table.Note = fmt.Sprintf("%d unchanged %ss not shown (below 0.1%% of both sides, absent from most runs, or beyond the largest %d)", hidden, what, htmlMaxUnchanged)
	}
	if r.flame != nil {
		page.Tree = r.flameTree()
	}
	return htmlreport.Write(w, page)
}

// htmlHeadline is the page's verdict in one sentence.
func (r *Report) htmlHeadline() string {
	return r.summary(textfmt.Name)
}
