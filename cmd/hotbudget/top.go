package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

const topUsage = `Usage: hotbudget top [flags] FILE

Prints self (flat) and total (cum) time per function, the numbers
'go tool pprof -top' prints, sorted by self time. Recursion counts once per
sample; shares are of all selected samples. Heap and allocation profiles
(go test -memprofile, runtime/pprof "heap" and "allocs", node --heap-prof)
print bytes or objects instead: --sample-index picks which, as
'go tool pprof -sample_index' does.

Examples:

	hotbudget top testdata/pprof/busy.pb.gz
	hotbudget top -n 5 --format markdown testdata/cpuprofile/busy.cpuprofile
	hotbudget top -n 0 --format json --thread CrRendererMain trace.json
	hotbudget top --focus '^main\.' --drop-synthetic profile.cpuprofile
	hotbudget top --format html --out busy.html testdata/pprof/busy.pb.gz
	hotbudget top --sample-index alloc_space mem.pprof

--format html writes one self-contained page (no network needed to view
it): the table and a flame graph of every selected sample (width is total
time; click to zoom, type to search). With --out the report goes to the
file and the text report to stdout.

JSON output (schema hotbudget.top/v2, stable; every function with -n 0):

	{"schema":"hotbudget.top/v2","unit":"ns","sample_type":"cpu/nanoseconds",
	 "total":N,"functions":[{"name","file","line","column",
	 "self","total","self_samples","total_samples"}]}

line and column are 1-based as in pprof, 0 when unknown. Every value (the
total, each function's self and total) is in unit: "ns" (nanoseconds),
"bytes", or "count" (objects, instructions, other events); sample_type
names it (e.g. "alloc_space/bytes"). self_samples and total_samples are
the sampling events behind a value: for a Go heap profile the allocations
the runtime sampled, its estimate of all of them undone.
`

// selection holds the flags that select samples, shared by top and diff.
type selection struct {
	focus, ignore string
	threads, pids listFlag
	view          *choiceFlag
	dropSynthetic bool
	sampleIndex   string
}

func addSelection(fs *flag.FlagSet, s *selection) {
	const rep = " (repeatable)"
	s.view = viewFlag(fs)
	fs.StringVar(&s.focus, "focus", "", "keep only samples with a function matching this `regexp` (pprof -focus)")
	fs.StringVar(&s.ignore, "ignore", "", "drop samples with a function matching this `regexp` (pprof -ignore)")
	fs.Var(&s.threads, "thread", "keep only samples of the thread with this `name or tid`"+rep)
	fs.Var(&s.pids, "pid", "keep only samples of the process with this `pid or name`"+rep)
	fs.BoolVar(&s.dropSynthetic, "drop-synthetic", false, "drop samples whose leaf is (idle), (program), (garbage collector) or (root)")
	fs.StringVar(&s.sampleIndex, "sample-index", "", "the sample value, by `type name or index`, as go tool pprof -sample_index: alloc_space, alloc_objects, inuse_space, inuse_objects of a Go heap profile (default: the profile's default type, else its last)")
}

// compile turns the flags into the selection of samples they say, on top
// of base (diff's default charges runtime.asyncPreempt to its caller).
func (s *selection) compile(base analysis.Selection) (analysis.Selection, error) {
	sel := base
	for _, f := range []struct {
		flag, re string
		to       **regexp.Regexp
	}{{"--focus", s.focus, &sel.Focus}, {"--ignore", s.ignore, &sel.Ignore}} {
		if f.re == "" {
			continue
		}
		re, err := regexp.Compile(f.re)
		if err != nil {
			return sel, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.to = re
	}
	sel.Threads = append(slices.Clip(base.Threads), s.threads...)
	sel.Processes = append(slices.Clip(base.Processes), s.pids...)
	sel.DropSynthetic = base.DropSynthetic || s.dropSynthetic
	if s.sampleIndex != "" {
		sel.SampleType = s.sampleIndex
	}
	if err := sel.Validate(); err != nil {
		return sel, fmt.Errorf("--thread, --pid: %w", err)
	}
	return sel, nil
}

func (s *selection) loadOptions() []loaders.Option {
	if s.view.value == "" {
		return nil
	}
	return []loaders.Option{loaders.WithView(loaders.View(s.view.value))}
}

func (c *cli) top(args []string) int {
	fs := c.flagSet("top", topUsage)
	format := newChoice("text", "text", "markdown", "json", "html")
	fs.Var(format, "format", "output `text|markdown|json|html`")
	out := fs.String("out", "", "write the report to `file` instead of stdout, which then shows the text report")
	n := fs.Int("n", 20, "show the top `N` functions; 0 shows all")
	var sel selection
	addSelection(fs.FlagSet, &sel)
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return c.usageErr("top", "want exactly one profile, got %d arguments", len(pos))
	}
	if *n < 0 {
		return c.usageErr("top", "-n must not be negative")
	}
	selected, err := sel.compile(analysis.Selection{})
	if err != nil {
		return c.usageErr("top", "%v", err)
	}
	path := pos[0]
	if err := checkOutputs([]outFile{{"--out", *out}}, pos); err != nil {
		return c.usageErr("top", "%v", err)
	}
	x, err := c.loadIndex("top", path, sel.loadOptions()...)
	var t *analysis.Table
	var notes []string // lines under the header
	var diffed *profile.Profile
	switch {
	case err != nil:
		// record --instructions's counted difference, which has counts
		// below zero that the loaders refuse: shown as it is.
		if diffed = countDifference(path); diffed == nil {
			return c.inputErr("top", err)
		}
		if t, err = differenceTable(diffed, selected); err != nil {
			return c.inputErr("top", fmt.Errorf("%s: %w", path, err))
		}
		for _, w := range t.Warnings {
			fmt.Fprintf(c.stderr, "hotbudget top: warning: %s: %s\n", textfmt.Line(path), textfmt.Line(w))
		}
		rec, ok := meta.Known(diffed)
		notes = append(notes, differenceNote(diffed))
		if l := perOp(rec, ok, t); l != "" {
			notes = append(notes, l)
		}
	default:
		if t, err = x.Table(selected); err != nil {
			return c.inputErr("top", fmt.Errorf("%s: %w", path, err))
		}
		if err := analysis.CheckTime("", selected, []*analysis.Index{x}, []*analysis.Table{t}); err != nil {
			return c.noTimeErr("top", err, map[string][]string{"": {path}})
		}
		rec, ok := (*indexload.Index)(x).Index().Facts.Known()
		if l := perOp(rec, ok, t); l != "" {
			notes = append(notes, l)
		}
	}
	shown := t.Functions
	if *n > 0 && len(shown) > *n {
		shown = shown[:*n]
	}
	write := func(w io.Writer, format string) error {
		switch format {
		case "json":
			return writeTopJSON(w, t, shown)
		case "markdown":
			return writeTopMarkdown(w, path, notes, t, shown)
		case "html":
			if diffed != nil {
				return writeDifferenceHTML(w, path, notes, t, shown)
			}
			return writeTopHTML(w, path, notes, x, []analysis.Option{selected}, t, shown)
		default:
			writeTopText(w, path, notes, t, shown)
		}
		return nil
	}
	if *out != "" {
		err = atomicfile.Write(*out, func(f *os.File) error { return write(f, format.value) })
		if err == nil {
			err = write(c.stdout, "text")
		}
	} else {
		err = write(c.stdout, format.value)
	}
	if err != nil {
		return c.inputErr("top", err)
	}
	return exitOK
}

// topSchema names the JSON output's schema: v1, unversioned, named each
// value's key after its unit (total_ns, self_bytes, ...); v2 writes every
// value under one key and its unit once, in "unit".
const topSchema = "hotbudget.top/v2"

// topJSON is top's JSON output: values in the table's unit, named once.
type topJSON struct {
	Schema     string        `json:"schema"`
	Unit       string        `json:"unit"`
	SampleType string        `json:"sample_type"`
	Total      int64         `json:"total"`
	Functions  []topFunction `json:"functions"`
}

// topFunction is one row; Self and Total are in topJSON.Unit.
type topFunction struct {
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
	out := topJSON{Schema: topSchema, Unit: t.Unit, SampleType: t.SampleType, Total: t.Total,
		Functions: make([]topFunction, 0, len(shown))}
	for _, f := range shown {
		out.Functions = append(out.Functions, topFunction{
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
