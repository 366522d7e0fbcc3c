// Explanations: writing them, in the text and Markdown reports.

package diff

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// How explanations are said: paths, their share of a change, summaries,
// and the text and Markdown writers.

// pathString names a path for people: long paths keep their two ends.
func pathString(path []string) string {
	if len(path) > 6 {
		path = append(append(append([]string(nil), path[:2]...), "…"), path[len(path)-3:]...)
	}
	return strings.Join(path, " → ")
}

// describePath names one entry of an explanation.
func (ex *Explanation) describePath(pc PathChange) string {
	if pc.Others > 0 {
		return fmt.Sprintf("%d other paths", pc.Others)
	}
	s := pathString(pc.Path)
	switch {
	case pc.End && ex.By == "callees":
		s += " (self)"
	case pc.End:
		s += " (stack root)"
	}
	return s
}

// contribution is the part of the function's change, as the report's
// change column shows it (Row.Relative), that comes through the path: its
// Share of it. When the means over runs and the report's medians disagree
// in direction, it is the path's change relative to the function's base.
func contribution(row *Row, ex *Explanation, pc PathChange) float64 {
	if ex.Delta != 0 && (ex.Delta > 0) == (row.Relative > 0) {
		return row.Relative * pc.Share
	}
	var base float64
	for _, p := range ex.Paths {
		base += p.Base
	}
	if base <= 0 {
		return 0
	}
	return pc.Delta / base
}

func pct(v float64) string { return fmt.Sprintf("%+.1f%%", v*100) }

// explainSummary says in one sentence where the change comes from.
func (r *Report) explainSummary(row *Row, ex *Explanation) string {
	total := pct(row.Relative)
	if ex.Delta != 0 && (ex.Delta > 0) != (row.Relative > 0) {
		total = "change"
	}
	if len(ex.Paths) == 1 {
		if pc := ex.Paths[0]; pc.End && len(pc.Path) == 1 && ex.By == "callees" {
			return fmt.Sprintf("all of the %s is its own (self) time", total)
		}
		return fmt.Sprintf("all of the %s comes through %s, its only %s path", total, ex.describePath(ex.Paths[0]), strings.TrimSuffix(ex.By, "s"))
	}
	var with, against, same []PathChange
	for _, pc := range ex.Paths {
		switch {
		case pc.Verdict == Unchanged:
			same = append(same, pc)
		case (pc.Delta > 0) == (ex.Delta > 0):
			with = append(with, pc)
		default:
			against = append(against, pc)
		}
	}
	kind := strings.TrimSuffix(ex.By, "s")
	for _, pc := range with {
		if pc.Others == 0 || math.Abs(pc.Share) < 0.5 {
			continue
		}
		// Most of it comes through paths too many to list: spread thin.
		n, largest := 0, 0.0
		for _, p := range ex.Paths {
			n += max(p.Others, 1)
			if p.Others == 0 && math.Abs(contribution(row, ex, p)) > math.Abs(largest) {
				largest = contribution(row, ex, p)
			}
		}
		return fmt.Sprintf("the %s is spread over %d %s paths, none of which carries more than %s of it", total, n, kind, pct(largest))
	}
	var parts []string
	if len(with) == 0 {
		big := ex.Paths[0]
		parts = append(parts, fmt.Sprintf("no path changed significantly on its own: the %s is spread over %d paths, the largest part (%s) through %s",
			total, len(ex.Paths), pct(contribution(row, ex, big)), ex.describePath(big)))
	} else {
		var through []string
		for i, pc := range with {
			if i == 0 {
				through = append(through, fmt.Sprintf("%s of the %s comes through %s", pct(contribution(row, ex, pc)), total, ex.describePath(pc)))
			} else {
				through = append(through, fmt.Sprintf("%s through %s", pct(contribution(row, ex, pc)), ex.describePath(pc)))
			}
		}
		parts = append(parts, strings.Join(through, ", "))
	}
	for _, pc := range against {
		parts = append(parts, fmt.Sprintf("%s through %s, the other way", pct(contribution(row, ex, pc)), ex.describePath(pc)))
	}
	if len(with) > 0 && len(same) > 0 {
		// The largest unchanged path is the one worth naming.
		sort.SliceStable(same, func(i, j int) bool {
			return math.Max(same[i].Base, same[i].Head) > math.Max(same[j].Base, same[j].Head)
		})
		what, verb := "the path "+ex.describePath(same[0]), "is"
		if same[0].Others > 0 {
			what, verb = "the "+ex.describePath(same[0]), "are"
		}
		if len(same) > 1 {
			what += fmt.Sprintf(" (and %d more)", len(same)-1)
			verb = "are"
		}
		parts = append(parts, fmt.Sprintf("%s %s unchanged", what, verb))
	}
	return strings.Join(parts, "; ")
}

// writeExplanations appends the explanations to the text report.
func (r *Report) writeExplanations(w io.Writer) error {
	first := true
	for i := range r.Rows {
		row := &r.Rows[i]
		ex := row.Explain
		if ex == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nwhere the changes come from (%s time split over %s):\n", r.Settings.Metric, ex.By)
			first = false
		}
		fmt.Fprintf(w, "%s: %s\n", textfmt.Name(row.Name), textfmt.Line(ex.Summary))
		if len(ex.Paths) == 1 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  of change\t%s\tp\tverdict\t\t%s path\n", r.pathHeader(), strings.TrimSuffix(ex.By, "s"))
		for _, pc := range ex.Paths {
			fmt.Fprintf(tw, "  %s\t%s\tp=%.3g\t%s\t\t%s\n", pct(contribution(row, ex, pc)), r.pathChange(pc), pc.P, pc.Verdict, textfmt.Line(ex.describePath(pc)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// shownPath formats a call path's base and head as the reports show them
// beside the function's Figures: in Share mode the path's real shares
// (BaseMean, HeadMean), else the fitted values.
func (r *Report) shownPath(pc PathChange) (base, head string) {
	if r.Settings.Mode == Share {
		return r.formatMetric(pc.BaseMean), r.formatMetric(pc.HeadMean)
	}
	return r.formatMetric(pc.Base), r.formatMetric(pc.Head)
}

// pathHeader names the column of a path's change as ChangeHeader names
// a function's.
func (r *Report) pathHeader() string { return "path " + r.ChangeHeader() }

// pathChange is a path's relative change as the table shows a function's.
func (r *Report) pathChange(pc PathChange) string {
	switch {
	case pc.Base == 0 && pc.Head > 0:
		return "new"
	case pc.Base > 0 && pc.Head == 0:
		return "gone"
	}
	return fmt.Sprintf("%+.1f%%", pc.Relative*100)
}

// writeMarkdownExplanations appends one collapsed section per explained
// function to the Markdown report.
func (r *Report) writeMarkdownExplanations(w io.Writer) {
	for i := range r.Rows {
		row := &r.Rows[i]
		ex := row.Explain
		if ex == nil {
			continue
		}
		fmt.Fprintf(w, "<details><summary><code>%s</code>: %s</summary>\n\n", textfmt.HTML(textfmt.Shorten(row.Name, textfmt.MaxName)), textfmt.HTML(ex.Summary))
		fmt.Fprintf(w, "| %s path | base | head | %s | of change | p | verdict |\n|:--|--:|--:|--:|--:|--:|:--|\n", strings.TrimSuffix(ex.By, "s"), r.pathHeader())
		for _, pc := range ex.Paths {
			b, h := r.shownPath(pc)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | p=%.3g | %s |\n", textfmt.MarkdownEscape(ex.describePath(pc)),
				b, h, r.pathChange(pc), pct(contribution(row, ex, pc)), pc.P, pc.Verdict)
		}
		fmt.Fprint(w, "\n</details>\n\n")
	}
}
