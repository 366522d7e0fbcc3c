package history

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Report is a history read back: the records, their series with change
// points, and the commit the summary of changes starts after.
type Report struct {
	// Records are oldest first.
	Records []*Record
	Series  []*Series
	// Since is the index of the first record whose changes the summary
	// lists (0: all); SinceRev names the revision it came from.
	Since    int
	SinceRev string
	// Method is the E-divisive configuration the noisy series were
	// analysed with.
	Method EDivisive
}

// Changes returns the change points at or after r.Since, with their
// series, newest first.
func (r *Report) Changes() []SeriesChange {
	var out []SeriesChange
	for _, s := range r.Series {
		for _, c := range s.Changes {
			if at := s.Points[c.Index].Record; at >= r.Since {
				out = append(out, SeriesChange{Series: s, Change: c, At: at})
			}
		}
	}
	// Newest first, then in series order (stable).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].At > out[j-1].At; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// SeriesChange is a change point with its series and the index of its
// record.
type SeriesChange struct {
	Series *Series
	Change Change
	At     int
}

// MethodLine names how change points were found.
func (r *Report) MethodLine() string {
	return fmt.Sprintf("change points: time by E-divisive means (Matteson and James 2014; permutation test, %d permutations, p <= %g, segments of at least %d commits, seed %d); exact counts by steps (instructions 0.5%%, B/op 8 bytes and 1%%, allocs/op half an object and 1%%)",
		r.Method.Permutations, r.Method.PValue, max(r.Method.MinSize, 2), r.Method.Seed)
}

// Format writes a value of m.
func Format(m Measure, v float64) string {
	switch m.Unit {
	case "share":
		return textfmt.Percent(v)
	case "count":
		if math.Abs(v) >= 1000 {
			return textfmt.Count(math.Round(v))
		}
	}
	return textfmt.Value(m.Unit, v)
}

// describe is a change in words: "+12.3% (1.2ms -> 1.35ms)".
func describe(m Measure, c ChangePoint) string {
	rel := "new"
	if c.Before != 0 {
		rel = fmt.Sprintf("%+.1f%%", 100*c.Change())
	}
	s := fmt.Sprintf("%s (%s -> %s", rel, Format(m, c.Before), Format(m, c.After))
	if c.P > 0 {
		s += fmt.Sprintf(", p=%.3g", c.P)
	}
	return s + ")"
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// date is the day of a record's commit.
func (r *Report) date(i int) string {
	d := r.Records[i].Date
	return d[:min(len(d), 10)]
}

// Sparkline draws values as block characters, lowest to highest.
func Sparkline(values []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return sparkline(values, lo, hi)
}

// exactSpan is how many times its tolerance an exact measure's chart (or
// sparkline) spans at least: a move within the tolerance, which is no
// change, is drawn a tenth of the height at most, not from the bottom to
// the top (fastjson's ObjectGet: 4256 and 4257 instructions an op, from
// the runtime's varying work, drew as ▁█).
const exactSpan = 10

// widen returns lo and hi widened about their middle to exactSpan times
// the measure's tolerance, for an exact measure; noisy ones as they are.
func (m Measure) widen(lo, hi float64) (float64, float64) {
	if !m.Exact {
		return lo, hi
	}
	mid := (lo + hi) / 2
	if span := exactSpan * m.Tolerance(mid); hi-lo < span {
		lo, hi = mid-span/2, mid+span/2
	}
	return lo, hi
}

func sparkline(values []float64, lo, hi float64) string {
	const blocks = "▁▂▃▄▅▆▇█"
	bars := []rune(blocks)
	var b strings.Builder
	for _, v := range values {
		i := 0
		if hi > lo {
			i = int(math.Round((v - lo) / (hi - lo) * float64(len(bars)-1)))
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

// sparkPoints is how many of the newest points a sparkline shows.
const sparkPoints = 40

func (s *Series) spark() string {
	pts := s.Points[max(0, len(s.Points)-sparkPoints):]
	v := make([]float64, len(pts))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, p := range pts {
		v[i] = p.Value
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	lo, hi = s.Measure.widen(lo, hi)
	return sparkline(v, lo, hi)
}

func (s *Series) name() string {
	if s.Function == "" {
		return s.Benchmark
	}
	return s.Function + " in " + s.Benchmark
}

func (r *Report) span() string {
	if len(r.Records) == 0 {
		return "no records"
	}
	first, last := 0, len(r.Records)-1
	return fmt.Sprintf("%d commits with records, %s (%s) to %s (%s)", len(r.Records),
		short(r.Records[first].Commit), r.date(first), short(r.Records[last].Commit), r.date(last))
}

func (r *Report) sinceWords() string {
	if r.SinceRev == "" {
		return "changes"
	}
	return "changes since " + r.SinceRev
}

// WriteText writes the summary for a terminal: the changes since Since,
// newest first, then each series' last value, range and trend. Names are
// escaped (textfmt.Name).
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "history: %s\n%s\n\n", r.span(), r.MethodLine())
	changes := r.Changes()
	fmt.Fprintf(&b, "%s: %d\n", r.sinceWords(), len(changes))
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s %s (%s): %s %s", short(c.Change.Commit), r.date(c.At), c.Series.Measure.Label,
			textfmt.Name(c.Series.name()), describe(c.Series.Measure, c.Change.ChangePoint))
		if c.Change.By != "" {
			fmt.Fprintf(&b, "; by %s", textfmt.Line(c.Change.By))
		}
		if c.Change.Context != "" {
			fmt.Fprintf(&b, "; also changed: %s", textfmt.Line(c.Change.Context))
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nseries (oldest to newest, the last 40 commits drawn):\n")
	for _, s := range r.Series {
		last := s.Points[len(s.Points)-1]
		fmt.Fprintf(&b, "  %s  %s: %s last %s, %d commits, %d changes\n", s.spark(), textfmt.Name(s.name()),
			s.Measure.Label, Format(s.Measure, last.Value), len(s.Points), len(s.Changes))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the summary as GitHub Markdown: names are code spans
// (textfmt.MarkdownCode), prose from records escaped (MarkdownEscape), and
// the whole cut to fit a comment (textfmt.LimitMarkdown).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	changes := r.Changes()
	fmt.Fprintf(&b, "### hotbudget history: %d %s\n\n%s; %s.\n\n", len(changes), r.sinceWords(), textfmt.MarkdownEscape(r.span()), textfmt.MarkdownEscape(r.MethodLine()))
	if len(changes) > 0 {
		b.WriteString("| commit | date | benchmark | function | measure | change |\n|---|---|---|---|---|---|\n")
		for _, c := range changes {
			var fns []string
			for _, f := range append([]string{c.Series.Function}, c.Change.Functions...) {
				if f != "" {
					fns = append(fns, textfmt.MarkdownCode(f))
				}
			}
			fn := strings.Join(fns, ", ")
			what := textfmt.MarkdownEscape(describe(c.Series.Measure, c.Change.ChangePoint))
			if c.Change.By != "" {
				what += "; by " + textfmt.MarkdownEscape(c.Change.By)
			}
			if c.Change.Context != "" {
				what += "; also changed: " + textfmt.MarkdownEscape(c.Change.Context)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", short(c.Change.Commit), r.date(c.At),
				textfmt.MarkdownCode(c.Series.Benchmark), fn, c.Series.Measure.Label, what)
		}
		b.WriteByte('\n')
	}
	b.WriteString("<details><summary>Series</summary>\n\n| benchmark | function | measure | trend | last | commits | changes |\n|---|---|---|---|---|---|---|\n")
	for _, s := range r.Series {
		fn := ""
		if s.Function != "" {
			fn = textfmt.MarkdownCode(s.Function)
		}
		last := s.Points[len(s.Points)-1]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d |\n", textfmt.MarkdownCode(s.Benchmark), fn, s.Measure.Label,
			s.spark(), Format(s.Measure, last.Value), len(s.Points), len(s.Changes))
	}
	b.WriteString("\n</details>\n")
	_, err := io.WriteString(w, textfmt.LimitMarkdown(b.String(), textfmt.MaxMarkdown))
	return err
}
