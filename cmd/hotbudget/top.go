package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/tables"
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
	x, err := input.Reader{Stderr: c.stderr, Cmd: "top"}.Index(path, sel.loadOptions()...)
	var t *analysis.Table
	var notes []string // lines under the header
	var diffed *profile.Profile
	switch {
	case err != nil:
		// record --instructions's counted difference, which has counts
		// below zero that the loaders refuse: shown as it is.
		if diffed = gate.CountDifference(path); diffed == nil {
			return c.inputErr("top", err)
		}
		if t, err = gate.DifferenceTable(diffed, selected); err != nil {
			return c.inputErr("top", fmt.Errorf("%s: %w", path, err))
		}
		for _, w := range t.Warnings {
			fmt.Fprintf(c.stderr, "hotbudget top: warning: %s: %s\n", textfmt.Line(path), textfmt.Line(w))
		}
		rec, ok := meta.Known(diffed)
		notes = append(notes, gate.DifferenceNote(diffed))
		if l := tables.PerOp(rec, ok, t); l != "" {
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
		if l := tables.PerOp(rec, ok, t); l != "" {
			notes = append(notes, l)
		}
	}
	shown := t.Functions
	if *n > 0 && len(shown) > *n {
		shown = shown[:*n]
	}
	rep := &tables.Top{Path: path, Notes: notes, Table: t, Shown: shown, Index: x, Options: []analysis.Option{selected}, Difference: diffed != nil}
	write := rep.Write
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
