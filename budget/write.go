package budget

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

func (r *Result) summary() string {
	failed := len(r.Failures())
	s := fmt.Sprintf("%d of %d checks passed", len(r.Checks)-failed, len(r.Checks))
	if failed > 0 {
		s = fmt.Sprintf("%d of %d checks failed", failed, len(r.Checks))
	}
	runs := "1 profile"
	if r.Profiles != 1 {
		runs = fmt.Sprintf("%d profiles", r.Profiles)
	}
	if r.Baseline > 0 {
		runs += fmt.Sprintf(", %d baseline", r.Baseline)
	}
	return fmt.Sprintf("budget %s: %s (%s)", r.Budget, s, runs)
}

func status(c RuleResult) string {
	if c.Pass {
		return "PASS"
	}
	return "FAIL"
}

// writeText writes one line per check (status, budget line, check, message)
// and a summary line. The text is for people and may change.
func (r *Result) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\t%s\n", status(c), textfmt.Line(r.Budget), c.Line, c.Check, textfmt.Line(c.Message))
		for _, w := range c.Warnings {
			fmt.Fprintf(tw, "\t\t\twarning: %s\n", textfmt.Line(w))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, textfmt.Line(r.summary()))
	return err
}

// writeMarkdown writes a table for a pull-request comment or a GitHub job
// summary. Function names are in code spans, other text from the profiles
// is escaped (textfmt.MarkdownEscape), and the table is cut to
// textfmt.MaxMarkdown bytes, saying what was left out.
func (r *Result) writeMarkdown(out io.Writer) error {
	var w strings.Builder
	icon := ":white_check_mark:"
	if !r.Passed() {
		icon = ":x:"
	}
	fmt.Fprintf(&w, "### %s %s\n\n", icon, textfmt.MarkdownEscape(r.summary()))
	fmt.Fprint(&w, "| | rule | check | function | got | limit | details |\n|---|---|---|---|---:|---:|---|\n")
	for _, c := range r.Checks {
		mark := ":white_check_mark:"
		if !c.Pass {
			mark = ":x:"
		}
		fn := ""
		if c.Function != "" {
			fn = textfmt.MarkdownCode(c.Function)
		}
		got := "—"
		if !c.Missing {
			got = format(c.Got, c.Unit)
		}
		details := c.Message
		for _, w := range c.Warnings {
			details += "; warning: " + w
		}
		fmt.Fprintf(&w, "| %s | %s (line %d) | %s | %s | %s | %s | %s |\n", mark, textfmt.MarkdownEscape(c.Rule), c.Line, c.Check, fn,
			got, format(c.Limit, c.Unit), textfmt.MarkdownEscape(details))
	}
	fmt.Fprintln(&w)
	_, err := io.WriteString(out, textfmt.LimitMarkdown(w.String(), textfmt.MaxMarkdown))
	return err
}

func format(v float64, unit string) string {
	switch unit {
	case "ns":
		return textfmt.Nanos(v)
	case "ns/op":
		return textfmt.Nanos(v) + "/op"
	case "share":
		return textfmt.Percent(v)
	case "bytes":
		return textfmt.Bytes(v)
	case "objects":
		return textfmt.Count(v) + " objects"
	case "instructions":
		return textfmt.Count(v) + " instructions"
	case "instructions/op":
		return textfmt.Count(v) + " instructions/op"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

// jsonResult is the stable JSON schema: the Result fields plus "passed".
type jsonResult struct {
	Passed bool `json:"passed"`
	*Result
}

// writeJSON writes the result in a stable schema:
//
//	{"passed":bool,"budget":file,"profiles":n,"baseline_profiles":n,
//	 "checks":[{"line","rule","selector","check","pass","missing","matched",
//	   "function","file","function_line","unit","got","limit","verdict","q","message","warnings"}]}
//
// unit is "ns", "ns/op" (per unit of work), "share" (0..1), "objects",
// "bytes", "instructions", "instructions/op" or "relative" (0.1 = +10%);
// got and limit are in it.
func (r *Result) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if r.Checks == nil {
		r2 := *r
		r2.Checks = []RuleResult{}
		r = &r2
	}
	return enc.Encode(jsonResult{r.Passed(), r})
}

// Write writes the result to w in format: "text" (one line per check and
// a summary line, for people; it may change), "markdown" (a table for a
// pull-request comment or a job summary) or "json" (a stable schema). Any
// other format is an error naming these.
func (r *Result) Write(w io.Writer, format string) error {
	return textfmt.Writers{
		{"text", r.writeText},
		{"markdown", r.writeMarkdown},
		{"json", r.writeJSON},
	}.Write(w, "budget.Result", format)
}
