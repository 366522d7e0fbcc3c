package history

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// maxHTMLName is how many characters of a name the page holds.
const maxHTMLName = 1000

// chart geometry, in SVG units.
const (
	chartW, chartH        = 760.0, 150.0
	padLeft, padRight     = 78.0, 12.0
	padTop, padBottom     = 10.0, 22.0
	plotW, plotH          = chartW - padLeft - padRight, chartH - padTop - padBottom
	functionChartH        = 110.0
	functionPlotH         = functionChartH - padTop - padBottom
	maxFunctionsPerBench  = 40
	markerHalf, markerTop = 5.0, 0.0
)

// htmlName makes an untrusted name safe to show as text: bounded, with
// control characters and invalid UTF-8 visible (html/template escapes the
// markup).
func htmlName(s string) string { return textfmt.Term(textfmt.Shorten(s, maxHTMLName)) }

type chartPoint struct {
	X, Y, YLo, YHi string
	Title          string
	Range          bool
}

type chartChange struct {
	X      string
	Marker string // the triangle's path
	Title  string
	Commit string
}

type chartLevel struct{ X1, X2, Y string }

type chart struct {
	Label, Last   string
	Height, PlotB string // the SVG's height, the plot's bottom
	YTop, YBottom string // axis labels
	YMid          string
	Line          string
	Points        []chartPoint
	Changes       []chartChange
	Levels        []chartLevel
	First, LastC  string // commits under the x axis
	Function      string
	Benchmark     string
}

type benchSection struct {
	Name      string
	Charts    []chart
	Functions []chart
	More      int // functions not drawn
}

type htmlChange struct {
	Commit, Date, Benchmark, Function, Measure, What, Context string
}

type htmlPage struct {
	Title, Span, Method, Since string
	Changes                    []htmlChange
	Benches                    []benchSection
	Series, Markers            int
}

// WriteHTML writes the report as one self-contained page: a chart (inline
// SVG) per benchmark and measure with its change points marked, each
// benchmark's functions in a section that opens on demand, and the
// changes since Since in a table. No script loads, nothing is fetched;
// the one inline script counts what was drawn for tests
// (window.__hotbudget). Every name is escaped by html/template, its
// control characters shown (textfmt.Term), and shortened to 1000
// characters.
func (r *Report) WriteHTML(w io.Writer) error {
	p := htmlPage{Title: "hotbudget history", Span: r.span(), Method: r.MethodLine(), Since: r.sinceWords()}
	// A function's change of instructions that its benchmark's row names
	// ("by ...") is not listed again: the functions' own markers are in
	// their charts (fastjson: 31 rows, 13 without them).
	named := map[string]bool{}
	for _, c := range r.Changes() {
		if c.Change.By != "" {
			named[c.Series.Benchmark+"\x00"+c.Change.Commit] = true
		}
	}
	for _, c := range r.Changes() {
		if c.Series.Function != "" && c.Series.Measure.Key == MeasureSelfInstr.Key && named[c.Series.Benchmark+"\x00"+c.Change.Commit] {
			continue
		}
		what := describe(c.Series.Measure, c.Change.ChangePoint)
		if c.Change.By != "" {
			what += "; by " + textfmt.Shorten(textfmt.Line(c.Change.By), maxHTMLName)
		}
		p.Changes = append(p.Changes, htmlChange{Commit: short(c.Change.Commit), Date: r.date(c.At), Benchmark: htmlName(c.Series.Benchmark),
			Function: htmlName(changeFunction(c)), Measure: c.Series.Measure.Label, What: what,
			Context: textfmt.Line(c.Change.Context)})
	}
	var cur *benchSection
	for _, s := range r.Series {
		if cur == nil || cur.Name != htmlName(s.Benchmark) {
			p.Benches = append(p.Benches, benchSection{Name: htmlName(s.Benchmark)})
			cur = &p.Benches[len(p.Benches)-1]
		}
		if s.Function == "" {
			cur.Charts = append(cur.Charts, r.chart(s, chartH))
			p.Series++
			p.Markers += len(s.Changes)
			continue
		}
		if len(cur.Functions) >= maxFunctionsPerBench {
			cur.More++
			continue
		}
		cur.Functions = append(cur.Functions, r.chart(s, functionChartH))
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("history html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func num(v float64) string { return fmt.Sprintf("%.1f", v) }

// changeFunction is the function column of a change: its series'
// function, or for a benchmark's instructions the functions whose steps
// are its change.
func changeFunction(c SeriesChange) string {
	if c.Series.Function != "" {
		return c.Series.Function
	}
	return strings.Join(c.Change.Functions, ", ")
}

// chart lays out one series: x by the record's index (so that the charts
// of a page line up), y from the lowest to the highest value drawn.
func (r *Report) chart(s *Series, height float64) chart {
	ph := height - padTop - padBottom
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range s.Points {
		lo, hi = math.Min(lo, math.Min(p.Lo, p.Value)), math.Max(hi, math.Max(p.Hi, p.Value))
	}
	if hi-lo < 1e-9*math.Max(1, math.Abs(hi)) {
		lo, hi = lo-math.Max(0.01*math.Abs(lo), 1e-9), hi+math.Max(0.01*math.Abs(hi), 1e-9)
	}
	lo, hi = s.Measure.widen(lo, hi)
	span := hi - lo
	lo, hi = lo-0.05*span, hi+0.05*span
	n := max(len(r.Records)-1, 1)
	x := func(rec int) float64 { return padLeft + plotW*float64(rec)/float64(n) }
	y := func(v float64) float64 { return padTop + ph*(hi-v)/(hi-lo) }
	c := chart{Label: s.Measure.Label, Height: num(height), PlotB: num(padTop + ph),
		YTop: Format(s.Measure, hi), YBottom: Format(s.Measure, lo), YMid: num(padTop + ph/2),
		First: short(r.Records[0].Commit), LastC: short(r.Records[len(r.Records)-1].Commit),
		Function: htmlName(s.Function), Benchmark: htmlName(s.Benchmark)}
	c.Last = Format(s.Measure, s.Points[len(s.Points)-1].Value)
	var line strings.Builder
	for i, p := range s.Points {
		if i > 0 {
			line.WriteByte(' ')
		}
		fmt.Fprintf(&line, "%s,%s", num(x(p.Record)), num(y(p.Value)))
		rec := r.Records[p.Record]
		title := fmt.Sprintf("%s %s: %s", short(rec.Commit), r.date(p.Record), Format(s.Measure, p.Value))
		ranged := p.Hi > p.Lo
		if ranged {
			title += fmt.Sprintf(" (runs %s to %s)", Format(s.Measure, p.Lo), Format(s.Measure, p.Hi))
		}
		c.Points = append(c.Points, chartPoint{X: num(x(p.Record)), Y: num(y(p.Value)), YLo: num(y(p.Lo)), YHi: num(y(p.Hi)), Title: title, Range: ranged})
	}
	c.Line = line.String()
	// Levels: the median of each segment between change points.
	start := 0
	for i := 0; i <= len(s.Changes); i++ {
		end := len(s.Points)
		if i < len(s.Changes) {
			end = s.Changes[i].Index
		}
		vals := make([]float64, 0, end-start)
		for _, p := range s.Points[start:end] {
			vals = append(vals, p.Value)
		}
		if len(vals) > 0 {
			c.Levels = append(c.Levels, chartLevel{X1: num(x(s.Points[start].Record)), X2: num(x(s.Points[end-1].Record)), Y: num(y(stats.Median(vals)))})
		}
		start = end
	}
	for _, ch := range s.Changes {
		// An exact count steps at the commit that made it, the first
		// point of the new level; a noisy measure's level changes
		// somewhere between the point before and that one.
		cx := x(s.Points[ch.Index].Record)
		if !s.Measure.Exact {
			cx = (x(s.Points[ch.Index-1].Record) + x(s.Points[ch.Index].Record)) / 2
		}
		title := fmt.Sprintf("%s changed at %s: %s", s.Measure.Label, short(ch.Commit), describe(s.Measure, ch.ChangePoint))
		if ch.By != "" {
			title += "; by " + textfmt.Line(ch.By)
		}
		if ch.Context != "" {
			title += "; also changed: " + textfmt.Line(ch.Context)
		}
		c.Changes = append(c.Changes, chartChange{X: num(cx), Title: title, Commit: ch.Commit,
			Marker: fmt.Sprintf("M%s,%s L%s,%s L%s,%s Z", num(cx-markerHalf), num(markerTop), num(cx+markerHalf), num(markerTop), num(cx), num(markerTop+2*markerHalf))})
	}
	return c
}

var pageTemplate = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{{.Title}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222;max-width:900px}
h1{font-size:20px} h2{font-size:15px;margin:22px 0 4px;font-family:monospace;word-break:break-all}
.meta{color:#555} table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
td.name{font-family:monospace;word-break:break-all} td.nw{white-space:nowrap;word-break:normal}
svg{display:block;margin:2px 0} .line{fill:none;stroke:#1f5fa8;stroke-width:1.5}
.pt{fill:#1f5fa8} .range{stroke:#9bb9dd;stroke-width:3} .level{stroke:#2a9d3a;stroke-width:1;stroke-dasharray:4 3}
.cp{stroke:#c62828;stroke-width:1.5;stroke-dasharray:3 2} .cpmark{fill:#c62828}
.axis{stroke:#999} .lbl{font:11px monospace;fill:#555}
details{margin:4px 0 10px} summary{cursor:pointer;color:#1f5fa8}
.fn{font:12px monospace;margin-top:6px;word-break:break-all}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="meta">{{.Span}}</p>
<p class="meta">{{.Method}}</p>
<h2 style="font-family:inherit">{{.Since}}: {{len .Changes}}</h2>
{{if .Changes}}<table id="changes"><tr><th>commit</th><th>date</th><th>benchmark</th><th>function</th><th>measure</th><th>change</th></tr>
{{range .Changes}}<tr><td class="name nw">{{.Commit}}</td><td class="nw">{{.Date}}</td><td class="name">{{.Benchmark}}</td><td class="name">{{.Function}}</td><td>{{.Measure}}</td><td>{{.What}}{{if .Context}}; also changed: {{.Context}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{range .Benches}}<section class="bench" data-name="{{.Name}}">
<h2>{{.Name}}</h2>
{{range .Charts}}{{template "chart" .}}{{end}}
{{if .Functions}}<details class="functions"><summary>functions ({{len .Functions}}{{if .More}}, {{.More}} more not drawn{{end}}): self share, or self instructions per op</summary>
{{range .Functions}}<div class="fn">{{.Function}}</div>{{template "chart" .}}{{end}}
</details>{{end}}
</section>
{{end}}
<script>
(function(){
  const errors = [];
  window.addEventListener('error', e => errors.push(String(e.message)));
  window.__hotbudget = {ready: true, readyMs: performance.now(), errors: errors,
    series: document.querySelectorAll('section.bench > svg.series').length,
    markers: document.querySelectorAll('section.bench > svg.series .cpmark').length,
    functionSeries: document.querySelectorAll('details.functions svg.series').length};
})();
</script>
</body></html>
{{define "chart"}}<svg class="series" data-measure="{{.Label}}" width="760" height="{{.Height}}" viewBox="0 0 760 {{.Height}}" role="img" aria-label="{{.Label}}">
<text class="lbl" x="4" y="20">{{.YTop}}</text><text class="lbl" x="4" y="{{.PlotB}}">{{.YBottom}}</text>
<text class="lbl" x="4" y="{{.YMid}}">{{.Label}}</text>
<line class="axis" x1="78" x2="78" y1="10" y2="{{.PlotB}}"/><line class="axis" x1="78" x2="748" y1="{{.PlotB}}" y2="{{.PlotB}}"/>
<text class="lbl" x="78" y="{{.Height}}" dy="-4">{{.First}}</text><text class="lbl" x="748" y="{{.Height}}" dy="-4" text-anchor="end">{{.LastC}} · last {{.Last}}</text>
{{range .Levels}}<line class="level" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}"/>{{end}}
{{range .Points}}{{if .Range}}<line class="range" x1="{{.X}}" x2="{{.X}}" y1="{{.YLo}}" y2="{{.YHi}}"/>{{end}}{{end}}
<polyline class="line" points="{{.Line}}"/>
{{range .Points}}<circle class="pt" cx="{{.X}}" cy="{{.Y}}" r="2.5"><title>{{.Title}}</title></circle>{{end}}
{{range .Changes}}<line class="cp" x1="{{.X}}" x2="{{.X}}" y1="10" y2="{{$.PlotB}}"/><path class="cpmark" data-commit="{{.Commit}}" d="{{.Marker}}"><title>{{.Title}}</title></path>{{end}}
</svg>{{end}}
`))
