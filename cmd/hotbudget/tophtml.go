package main

import (
	"fmt"
	"io"
	"math"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/htmlreport"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

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
