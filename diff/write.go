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
//     counts still those of the whole report (perfassert's failure text);
//   - "summary": the text table's last line alone: what needs attention.
//
// Any other format is an error naming these.
func (r *Report) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
		{"html", r.writeHTML},
		{"regressions", r.writeRegressions},
		{"summary", line(r.summaryLine)},
	}.Write(w, "diff.Report", format)
}

// Write writes the report to w in format: "text" (the verdict, the
// tolerance and per function its allocations per unit of work on both
// sides), "markdown" (the same for a pull-request comment), "json"
// (AllocReport's fields), "html" (one self-contained page) or "summary"
// (the verdict in one line, the text's first). Any other format is an
// error naming these.
func (r *AllocReport) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
		{"html", r.writeHTML},
		{"summary", line(r.summaryLine)},
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

// line writes the line s returns as a report format.
func line(s func() string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s()+"\n")
		return err
	}
}
