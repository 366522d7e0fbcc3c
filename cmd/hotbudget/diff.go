package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
)

const diffUsage = `Usage: hotbudget diff [flags] BASE... -- HEAD...

Compares head profiles with baseline profiles function by function and
judges each function regressed, improved, unchanged, new or gone. Each side
is one profile or several runs (globs are expanded). With several runs a
side each function's run-to-run noise is measured and moderated across all
functions (--assume nothing: Mann-Whitney U per function, as benchstat;
--assume normal: Welch's t-test); with one profile a side the noise is
learned from the spread of all functions' changes. Exact data (duration
events) has no noise. The false-discovery rate across functions is held at
--alpha, and a change must exceed both --min-change and --min-time to
count. The whole program's time per unit of work is judged too when the
work is known (--same-work, or recorded by perfassert and record).

A function renamed in the change would show as gone and new, which fail no
gate: --rename OLD=NEW judges them as one function, under its new name. The
report suggests it when a gone and a new function share a source file.

Exact counts (perfassert.Instructions captures and baselines, record
--instructions, callgrind files) are judged as counts, function by
function, without statistics, as MatchBaseline judges them.

Times are compared, never raw sample counts, so profiles sampled at
different intervals compare correctly. By default each function's share of
its profile is compared (--mode share): it is unaffected by run length.

Exit status: 0 nothing regressed, 1 something regressed, 2 usage or input
error. Under GitHub Actions (GITHUB_ACTIONS=true) the Markdown report is
also appended to $GITHUB_STEP_SUMMARY and each regression is printed as
an ::error annotation naming the function.

Examples:

	hotbudget diff base.pb.gz -- head.pb.gz
	hotbudget diff 'base/*.pb.gz' -- 'head/*.pb.gz'
	hotbudget diff --metric total --mode absolute --min-change 5% a.cpuprofile -- b.cpuprofile
	hotbudget diff --anchor main.handleRequest base/*.pprof -- head/*.pprof
	hotbudget diff --format markdown --pprof diff.pb.gz base.pb.gz -- head.pb.gz
	go tool pprof -top diff.pb.gz
	hotbudget diff --format html --out report.html 'base/*.pb.gz' -- 'head/*.pb.gz'
	hotbudget diff --rename 'main.parse=main.parseRecords' base/*.pb.gz -- head/*.pb.gz

Each regressed or improved function is explained: its change split over
the call paths it comes through (callers for self time, callees for total
time), each path judged like a function. --format html writes one
self-contained page (no network needed to view it) with the verdicts, the
explanations and a differential flame graph: width is time, colour the
change, judged functions marked; click to zoom, type to search. With --out
the report goes to the file and the text report to stdout; --html writes
the HTML page besides any --format.
`

func (c *cli) diff(args []string) int {
	fs := c.flagSet("diff", diffUsage)
	d := addDiffFlags(fs.FlagSet)
	format := newChoice("text", "text", "markdown", "json", "html")
	fs.Var(format, "format", "output `text|markdown|json|html`")
	var out outputs
	fs.StringVar(&out.out, "out", "", "write the report to `file` instead of stdout, which then shows the text report")
	fs.StringVar(&out.html, "html", "", "also write the HTML report (flame graph, explanations) to `file`")
	pprofOut := fs.String("pprof", "", "also write the difference as a pprof profile to `file` (go tool pprof shows it; base negated with pprof::base labels)")
	var sel selection
	addSelection(fs.FlagSet, &sel)

	// Split at the first "--": flags may appear among the base profiles;
	// everything after it is a head profile, even a name starting with '-'
	// (a glob the shell expanded may yield one).
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 {
		if _, code := c.parse(fs, args); code >= 0 {
			return code
		}
		return c.usageErr("diff", "separate baseline and head profiles with --, as in: hotbudget diff BASE... -- HEAD...")
	}
	basePaths, code := c.parse(fs, args[:sep])
	if code >= 0 {
		return code
	}
	headPaths := args[sep+1:]
	if len(basePaths) == 0 || len(headPaths) == 0 {
		return c.usageErr("diff", "need at least one profile on each side of --")
	}
	for _, p := range headPaths {
		if _, err := os.Lstat(p); err != nil && strings.HasPrefix(p, "-") {
			return c.usageErr("diff", "%s: no such head profile: everything after -- is a head profile; flags go before --", p)
		}
	}
	opts, err := d.options(fs.FlagSet, &sel)
	if err != nil {
		return c.usageErr("diff", "%v", err)
	}
	if err := checkOutputs([]outFile{{"--out", out.out}, {"--html", out.html}, {"--pprof", *pprofOut}}, append(slices.Clip(basePaths), headPaths...)); err != nil {
		return c.usageErr("diff", "%v", err)
	}
	sides, err := input.Reader{Stderr: c.stderr, Cmd: "diff"}.Indexes(sel.loadOptions(), basePaths, headPaths)
	if err != nil {
		return c.inputErr("diff", err)
	}
	if counted, err := gate.CountedSides(sides, [][]string{basePaths, headPaths}); err != nil {
		return c.inputErr("diff", err)
	} else if counted {
		return c.diffCounts(d, sel, format.value, out, basePaths, headPaths)
	}
	rep, err := diff.CompareIndex(sides[0], sides[1], opts...)
	if ue := (*diff.UnrelatedError)(nil); errors.As(err, &ue) {
		ue.Files = [2][]string{basePaths, headPaths}
	}
	if err != nil {
		return c.noTimeErr("diff", err, map[string][]string{"base": basePaths, "head": headPaths})
	}
	what, mods, gateRe := d.gateWhat(nil)
	if err := gate.GateUnmatched([]*diff.Report{rep}, what, mods, gateRe); err != nil {
		return c.inputErr("diff", err)
	}
	if *pprofOut != "" {
		// Only the pprof output needs the profiles themselves: loaded
		// again, their warnings printed with the indexes.
		if err := gate.WriteDiffPprof(*pprofOut, basePaths, headPaths, sel.loadOptions()); err != nil {
			return c.inputErr("diff", err)
		}
	}
	return c.report("diff", rep, format.value, out)
}

// outputs are the files a report goes to besides stdout.
type outputs struct {
	out  string // the --format report, instead of stdout (which shows text)
	html string // the HTML report, besides any format
}

// writeReport writes rep in format to w.
func writeReport(w io.Writer, rep *diff.Report, format string) error {
	switch format {
	case "json":
		return rep.Write(w, "json")
	case "markdown":
		return rep.Write(w, "markdown")
	case "html":
		return rep.Write(w, "html")
	}
	return rep.Write(w, "text")
}

// report prints a diff report, writes the files out names, and returns
// the exit code.
func (c *cli) report(cmd string, rep *diff.Report, format string, out outputs) int {
	gate.FlagWords(rep)
	toFile := func(path, format string) error {
		return atomicfile.Write(path, func(f *os.File) error { return writeReport(f, rep, format) })
	}
	var err error
	if out.out != "" {
		if err = toFile(out.out, format); err == nil {
			err = writeReport(c.stdout, rep, "text")
		}
	} else {
		err = writeReport(c.stdout, rep, format)
	}
	if err == nil && out.html != "" {
		err = toFile(out.html, "html")
	}
	if err != nil {
		return c.inputErr(cmd, err)
	}
	anns := ghactions.OfDiff(cmd, rep)
	if err := c.github().Report(func(w *bytes.Buffer) error { return rep.Write(w, "markdown") }, anns); err != nil {
		return c.inputErr(cmd, err)
	}
	if rep.Failed() {
		return exitFail
	}
	return exitOK
}

// gateWhat names the gate the flags chose, or else the modules mods
// gated by default, for a gate that matched nothing (gateUnmatched).
func (d *diffFlags) gateWhat(mods []string) (what string, modules []string, gate string) {
	switch {
	case d.gate != "":
		return "--gate " + d.gate, nil, d.gate
	case d.module != "":
		return "--module " + d.module, strings.Fields(d.module), ""
	}
	if len(mods) == 0 {
		return "the comparison", nil, ""
	}
	return "the functions of " + strings.Join(mods, " ") + " (the module gated by default; --gate . gates every function)", mods, ""
}

// diffFlags are the statistical flags shared by diff and record.
type diffFlags struct {
	metric, mode, key, assume *choiceFlag
	anchor                    string
	sameWork                  bool
	only                      string
	gate, module              string
	alpha                     float64
	minChange                 string
	minTime                   time.Duration
	renames                   listFlag
}

// assumeUsage documents --assume, for diff and record (bench has
// benchAssumeUsage).
const assumeUsage = "test for several runs a side: `model|nothing|normal` (model: noise learned across all functions; nothing: Mann-Whitney U per function; normal: Welch's t-test per function)"

func newAssume() *choiceFlag {
	return newChoice(string(diff.DefaultSettings().Assume), string(diff.AssumeModel), string(diff.AssumeNothing), string(diff.AssumeNormal))
}

// addDiffFlags registers the comparison flags on fs.
func addDiffFlags(fs *flag.FlagSet) *diffFlags {
	d := &diffFlags{
		metric: newChoice(string(diff.DefaultSettings().Metric), string(diff.Self), string(diff.Total)),
		mode:   newChoice(string(diff.DefaultSettings().Mode), string(diff.Share), string(diff.Absolute), string(diff.PerOp)),
		key:    newChoice(string(diff.DefaultSettings().Key), string(diff.KeyName), string(diff.KeyNameFile), string(diff.KeyNameFileLine)),
		assume: newAssume(),
	}
	fs.Var(d.metric, "metric", "compare `self|total` time")
	fs.Var(d.mode, "mode", "normalise as `share|absolute|per-op` (per-op needs --anchor)")
	fs.Var(d.key, "key", "match functions across builds by `name|name+file|name+file+line`")
	fs.StringVar(&d.anchor, "anchor", "", "per-op mode: this `function`'s total time is one unit of work")
	fs.BoolVar(&d.sameWork, "same-work", false, "every run of both sides did the same work: judge the whole program's time per run (the headline)")
	fs.Var(d.assume, "assume", assumeUsage)
	fs.StringVar(&d.only, "only", "", "judge only functions matching this `regexp` (the rest still count in totals; e.g. your module, not the runtime)")
	fs.StringVar(&d.gate, "gate", "", "gate only functions matching this `regexp`; the rest are tested and shown, never fail (--gate . gates every function)")
	fs.StringVar(&d.module, "module", "", "gate only the functions of the Go module at this import `path` (as --gate); the runtime's and the standard library's are shown, not gated")
	fs.Float64Var(&d.alpha, "alpha", diff.DefaultSettings().Alpha, "false-discovery `rate` across functions")
	fs.StringVar(&d.minChange, "min-change", fmt.Sprintf("%g%%", 100*diff.DefaultSettings().MinRelative), "smallest relative `change` that counts")
	fs.DurationVar(&d.minTime, "min-time", diff.DefaultSettings().MinAbsolute, "smallest absolute `time` change that counts (absolute and per-op modes)")
	fs.Var(&d.renames, "rename", "judge a function renamed in the change as one function: `OLD=NEW`, its names in base and head (repeatable)")
	return d
}

// options turns the flags that were set into diff options.
func (d *diffFlags) options(fs *flag.FlagSet, sel *selection) ([]diff.Option, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var opts []diff.Option
	if set["metric"] {
		opts = append(opts, diff.WithMetric(diff.Metric(d.metric.value)))
	}
	if set["mode"] {
		if d.mode.value == string(diff.PerOp) && d.anchor == "" {
			return nil, errors.New("--mode per-op needs --anchor FUNCTION")
		}
		if d.mode.value != string(diff.PerOp) { // --anchor sets it
			opts = append(opts, diff.WithMode(diff.Mode(d.mode.value)))
		}
	}
	if set["key"] {
		opts = append(opts, diff.WithKey(diff.Key(d.key.value)))
	}
	if set["assume"] {
		opts = append(opts, diff.WithAssumption(diff.Assumption(d.assume.value)))
	}
	if d.only != "" {
		re, err := regexp.Compile(d.only)
		if err != nil {
			return nil, fmt.Errorf("--only: %w", err)
		}
		opts = append(opts, diff.WithOnly(re))
	}
	switch {
	case d.gate != "" && d.module != "":
		return nil, errors.New("--gate and --module both say which functions are gated: give one")
	case d.gate != "":
		re, err := regexp.Compile(d.gate)
		if err != nil {
			return nil, fmt.Errorf("--gate: %w", err)
		}
		opts = append(opts, diff.WithGate(re))
	case d.module != "":
		mods := strings.Fields(d.module)
		if len(mods) == 0 {
			return nil, errors.New("--module: give a module's import path")
		}
		opts = append(opts, diff.WithGate(gate.ModulePattern(mods)))
	}
	if d.anchor != "" {
		opts = append(opts, diff.WithAnchor(d.anchor))
	}
	if d.sameWork {
		opts = append(opts, diff.WithSameWork())
	}
	if set["alpha"] {
		if !(d.alpha > 0 && d.alpha < 1) {
			return nil, fmt.Errorf("--alpha must be between 0 and 1, got %v", d.alpha)
		}
		opts = append(opts, diff.WithAlpha(d.alpha))
	}
	if set["min-change"] {
		rel, err := parsePercent(d.minChange)
		if err != nil {
			return nil, fmt.Errorf("--min-change: %w", err)
		}
		opts = append(opts, diff.WithMinChange(rel))
	}
	if set["min-time"] {
		if d.minTime < 0 {
			return nil, fmt.Errorf("--min-time must not be negative, got %v", d.minTime)
		}
		if d.mode.value != string(diff.Absolute) {
			// Shares (and per-op with an anchor, ratios) change by share
			// points: a time there would be ignored, so it is refused.
			return nil, fmt.Errorf("--min-time applies with --mode absolute; --mode %s measures changes in share points", d.mode.value)
		}
		opts = append(opts, diff.WithMinAbsolute(d.minTime))
	}
	for _, r := range d.renames {
		old, new, ok := strings.Cut(r, "=")
		if !ok {
			return nil, fmt.Errorf("--rename %q: want OLD=NEW, the function's name in the base and in head", r)
		}
		opts = append(opts, diff.WithRename(strings.TrimSpace(old), strings.TrimSpace(new)))
	}
	if sel == nil {
		return opts, nil
	}
	selected, err := sel.compile(diff.DefaultSettings().Selection)
	if err != nil {
		return nil, err
	}
	return append(opts, diff.WithSelection(selected)), nil
}
