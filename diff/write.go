package diff

import (
	"io"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Write writes the report to w in format:
//
//   - "text": a benchstat-like table, regressions first, with a header
//     saying which side is which and what was compared;
//   - "markdown": a pull-request comment (headline, table, explanations);
//   - "json": indented JSON in a stable schema ("schema":
//     "hotbudget.diff/v3"; example: testdata/diff/regress.json);
//   - "html": one self-contained page with a differential flame graph;
//   - "regressions": the text table with the regressed rows only, the
//     counts still those of the whole report (perfassert's failure text).
//
// Any other format is an error naming these.
func (r *Report) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
		{"html", r.writeHTML},
		{"regressions", r.writeRegressions},
	}.Write(w, "diff.Report", format)
}

// Write writes the report to w in format: "text" (the verdict, the
// tolerance and per function its allocations per unit of work on both
// sides), "markdown" (the same for a pull-request comment), "json"
// (AllocReport's fields) or "html" (one self-contained page). Any other
// format is an error naming these.
func (r *AllocReport) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
		{"html", r.writeHTML},
	}.Write(w, "diff.AllocReport", format)
}

// Write writes the report to w in format "text": a line with the whole
// count, then a line per changed function with the counts of both sides
// and the verdict. Any other format is an error naming "text".
func (r *CountReport) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
	}.Write(w, "diff.CountReport", format)
}
