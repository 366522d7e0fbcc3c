package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hotbudget/hotbudget/internal/history"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// What record reports: the per-benchmark comparisons in order, the summary
// line, the text, Markdown and JSON reports.

// Measurement is what record measured, per benchmark and side: its runs' profiles,
// counts, allocations and benchmark results, with the revisions and modules.
type Measurement struct {
	out                  string
	baseRev, headRev     revision
	pairs                []diff.Pair // per benchmark both sides have: its runs' profiles
	modules              []string    // the module(s) record ran in (go list -m)
	baseBench, headBench []byte
	allocs               []allocResult // per benchmark both sides have: allocations per op, exact
	exact                []exactResult // --instructions: per benchmark both sides have
	// why is the report's first line: the instrument and why it was
	// chosen (Config.why).
	why string
	// notCounted says which benchmarks a counted record left out to fit
	// --budget: "" when none.
	notCounted string
	// baseHistory is the record the base's counts came from
	// (--base-from-history); nil when the base was measured.
	baseHistory *history.Record
	// timeShown lists the benchmark results of measured time that changed
	// against a base from the history: shown, not gated
	// (ungateMeasuredTime).
	timeShown []string
	// cfg is what was measured with; shard is what a shard (cfg.Shard)
	// writes for merge, nil otherwise.
	cfg   Config
	shard *shardLog
}

type revision struct {
	Name   string `json:"revision"`
	Commit string `json:"commit"` // "" for the working tree
}

func (r revision) String() string {
	if r.Commit == "" {
		return ". (working tree)"
	}
	short := r.Commit[:min(len(r.Commit), 12)]
	if r.Name == r.Commit || r.Name == short {
		return short
	}
	return fmt.Sprintf("%s (%s)", r.Name, short)
}

// ordered returns the benchmarks' reports in the order they are shown:
// those that fail first, then those with near misses, then the rest, each
// group in benchmark order.
func ordered(funcs []*diff.Report) []*diff.Report {
	out := slices.Clone(funcs)
	rank := func(r *diff.Report) int {
		switch {
		case r.Failed():
			return 0
		case hasNearMiss(r):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b *diff.Report) int { return rank(a) - rank(b) })
	return out
}

// recordSummary is one line over every benchmark's functions.
func recordSummary(funcs []*diff.Report) string {
	var failed, near []string
	rows, judged := 0, 0
	for _, r := range funcs {
		rows += len(r.Rows)
		judged += r.Judged()
		if r.Failed() {
			failed = append(failed, textfmt.Name(r.Name))
		}
		if slices.ContainsFunc(r.Rows, gatedNearMiss) {
			near = append(near, textfmt.Name(r.Name))
		}
	}
	line := fmt.Sprintf("%d benchmarks, %d function rows (%d judged): ", len(funcs), rows, judged)
	if len(failed) == 0 {
		line += "no regression"
	} else {
		line += fmt.Sprintf("%d regressed (%s)", len(failed), textfmt.List(failed, 4))
	}
	if len(near) > 0 {
		line += fmt.Sprintf("; near misses in %s", textfmt.List(near, 4))
	}
	return line
}

// writeTime writes the report of a time verdict in format. By default the text and
// the Markdown are short (issue 32: about 80 lines and 3 a flagged
// benchmark, however many benchmarks ran): the verdict first and last,
// what was flagged, a line for the rest; full prints every table.
func (v *Verdict) writeTime(stdout io.Writer, format string, full bool) error {
	var err error
	res, funcs, benches, allocs, verdict, exit := v.m, v.Funcs, v.Benches, v.Allocs, v.Line, v.Exit
	shown := ordered(funcs)
	md := func(out *bytes.Buffer) error { return v.markdownTime(out, full) }
	switch format {

	case "json":
		err = writeRecordJSON(stdout, res, verdict, exit, funcs, benches, allocs)
	case "markdown":
		var b bytes.Buffer
		if err = md(&b); err == nil {
			_, err = stdout.Write(b.Bytes())
		}
	default:
		fmt.Fprintf(stdout, "%s\n%s\n%s\n\n", textfmt.Line(res.why), textfmt.Line(verdict), textfmt.Line(historyBaseLine(res.baseHistory)))
		fmt.Fprintf(stdout, "functions' CPU time (%s -> %s, each function's share of its benchmark's profiles, one false-discovery control over all):\n", textfmt.Line(res.baseRev.String()), textfmt.Line(res.headRev.String()))
		if full {
			for _, r := range shown {
				fmt.Fprintf(stdout, "\n== %s ==\n", textfmt.Name(r.Name))
				if err = r.Write(stdout, "text"); err != nil {
					break
				}
			}
		} else {
			writeFunctionsShort(stdout, funcs)
		}
		if err == nil {
			if full {
				err = writeAllocsText(stdout, allocs)
			} else {
				err = writeAllocsShort(stdout, allocs)
			}
		}
		if err == nil {
			fmt.Fprintf(stdout, "\n%s\n", textfmt.Line(recordSummary(funcs)))
			if len(allocs) > 0 {
				fmt.Fprintf(stdout, "%s\n", textfmt.Line(allocsSummary(allocs)))
			}
			fmt.Fprintf(stdout, "\nbenchmark results (the whole benchmark's time, bytes and allocations per op, as benchstat judges them; a measure of its own beside its functions' shares):\n")
			if full {
				err = recordBenchWords(benches).Write(stdout, "text")
			} else {
				writeBenchesShort(stdout, benches)
			}
			if len(res.timeShown) > 0 {
				fmt.Fprintf(stdout, "  %s\n", textfmt.Line(timeShownLine(res.timeShown)))
			}
		}
		if err == nil {
			var where []string
			if !full {
				where = append(where, "the full tables: --full")
			}
			if res.out != "" {
				where = append(where, "every profile: "+textfmt.Line(res.out))
			}
			if len(where) > 0 {
				fmt.Fprintf(stdout, "\n%s\n", strings.Join(where, "; "))
			}
			fmt.Fprintf(stdout, "%s\n", textfmt.Line(verdict))
		}
	}
	return err
}

// markdownTime writes the Markdown report of a time verdict to out: the
// comment a pull request gets, within GitHub's limit.
func (v *Verdict) markdownTime(out *bytes.Buffer, full bool) error {
	res, funcs, benches, allocs, verdict, exit := v.m, v.Funcs, v.Benches, v.Allocs, v.Line, v.Exit
	shown := ordered(funcs)
	// The whole comment within GitHub's limit (textfmt.LimitMarkdown).
	w := new(bytes.Buffer)
	defer func() { out.WriteString(textfmt.LimitMarkdown(w.String(), textfmt.MaxMarkdown)) }()
	icon := "✅"
	if exit != exitOK {
		icon = "❌"
	}
	fmt.Fprintf(w, "## %s %s\n\n%s\n\n%s\n\n", icon, textfmt.MarkdownEscape(verdict), textfmt.MarkdownEscape(res.why), textfmt.MarkdownEscape(historyBaseLine(res.baseHistory)))
	if !full {
		return writeRecordMarkdownShort(w, res, verdict, funcs, benches, allocs)
	}
	fmt.Fprintf(w, "Functions: %s\n\n", textfmt.MarkdownEscape(recordSummary(funcs)))
	if err := writeAllocsMarkdown(w, allocs); err != nil {
		return err
	}
	var quiet []*diff.Report
	for _, r := range shown {
		if !r.Failed() && !hasNearMiss(r) && len(funcs) > 1 {
			quiet = append(quiet, r)
			continue
		}
		fmt.Fprintf(w, "#### %s\n\n", textfmt.MarkdownCode(r.Name))
		if err := r.Write(w, "markdown"); err != nil {
			return err
		}
		w.WriteString("\n")
	}
	if len(quiet) > 0 {
		fmt.Fprintf(w, "<details><summary>%d benchmarks with no regression and no near miss</summary>\n\n", len(quiet))
		for _, r := range quiet {
			fmt.Fprintf(w, "- %s: %s\n", textfmt.MarkdownCode(r.Name), textfmt.MarkdownEscape(summaryOf(r)))
		}
		w.WriteString("\n</details>\n\n")
	}
	return recordBenchWords(benches).Write(w, "markdown")
}

// recordBenchWords is the benchmark report with its advice in record's
// words: record runs the benchmarks --runs times, not go test -count.
func recordBenchWords(benches *bench.Report) *bench.Report {
	b := *benches
	b.Warnings = make([]string, len(benches.Warnings))
	for i, w := range benches.Warnings {
		b.Warnings[i] = strings.ReplaceAll(w, "run go test -count 6 or more", "run hotbudget record --runs 6 or more")
	}
	return &b
}

// writeRecordJSON writes every report in one object:
//
//	{
//	  "schema": "hotbudget.record/v4",
//	  "instrument": "time",
//	  "why": "timing: chosen by --instrument time",  // the text report's first line
//	  "verdict": "hotbudget record: regressed (exit 1): ...",  // the text report's first and last line
//	  "exit": 1,
//	  "base": {"revision": "origin/main", "commit": "0123..."},
//	  "head": {"revision": ".", "commit": ""},   // "" for the working tree
//	  "out": "perf",                              // where the profiles are
//	  "functions": [{hotbudget.diff/v3 report, "name": "PKG BenchmarkX"}, ...],
//	  "benchmarks": {hotbudget.bench/v2 report},
//	  "allocations": [{diff.AllocReport, "name": "PKG BenchmarkX", "exact": true}, ...]
//	}
//
// v2 differs from v1: functions is one report per benchmark, named, in the
// order the text report shows them (failing first), instead of one report
// of the merged profiles. v3 adds allocations: each benchmark's functions'
// allocations per op, exact, failing first (absent with --no-allocs). v4's
// functions are hotbudget.diff/v3 reports (values under keys that do not
// name a unit: "total", "self", not "total_ns", "self_ns"), v3's v2.
func writeRecordJSON(w io.Writer, res *Measurement, verdict string, exit int, funcs []*diff.Report, benches *bench.Report, allocs []*diff.AllocReport) error {
	fs := make([]json.RawMessage, 0, len(funcs))
	for _, r := range ordered(funcs) {
		var f bytes.Buffer
		if err := r.Write(&f, "json"); err != nil {
			return err
		}
		fs = append(fs, f.Bytes())
	}
	var b bytes.Buffer
	if err := benches.Write(&b, "json"); err != nil {
		return err
	}
	from, recorded := "measured", ""
	if h := res.baseHistory; h != nil {
		from, recorded = "history", h.Recorded
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema string `json:"schema"`
		// Instrument is what was measured ("time"), Why the report's
		// first line: which instrument and why.
		Instrument string   `json:"instrument"`
		Why        string   `json:"why"`
		Verdict    string   `json:"verdict"`
		Exit       int      `json:"exit"`
		Base       revision `json:"base"`
		// BaseFrom is "measured", or "history" when the base's runs came
		// from its record (BaseRecorded: when).
		BaseFrom     string `json:"base_from"`
		BaseRecorded string `json:"base_recorded,omitempty"`
		// TimeNotGated are the benchmark results of measured time that
		// changed against a base from the history: shown, not gated.
		TimeNotGated []string            `json:"time_not_gated,omitempty"`
		Head         revision            `json:"head"`
		Out          string              `json:"out"`
		Functions    []json.RawMessage   `json:"functions"`
		Benchmarks   json.RawMessage     `json:"benchmarks"`
		Allocations  []*diff.AllocReport `json:"allocations,omitempty"`
	}{"hotbudget.record/v4", "time", res.why, verdict, exit, res.baseRev, from, recorded, res.timeShown, res.headRev, res.out, fs, b.Bytes(), orderedAllocs(allocs)})
}

// hasNearMiss reports whether a row of r has a near miss: suspicious, not
// failing.
func hasNearMiss(r *diff.Report) bool {
	return slices.ContainsFunc(r.Rows, func(row diff.Row) bool { return row.NearMiss != "" })
}

// summaryOf is a report's verdict in one line (its "summary" format).
func summaryOf(r interface{ Write(io.Writer, string) error }) string {
	var b strings.Builder
	if err := r.Write(&b, "summary"); err != nil {
		return err.Error()
	}
	return strings.TrimSuffix(b.String(), "\n")
}
