package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

const historyUsage = `Usage:

	hotbudget history append --out DIR [--commit REV] [flags]
	hotbudget history show [--rev REV] [--since REV] [--functions] [--format text|markdown|json]
	hotbudget history html [--rev REV] [--since REV] [--out FILE]
	hotbudget history prune [--rev REV] [--keep-functions K] [--keep-runs K] [--squash]

Keeps the results of 'hotbudget record' across the commits of a branch, in
the repository itself: the record of commit C is the git note of C under
refs/notes/hotbudget, one line of JSON ('git notes --ref=hotbudget show C'
prints it; docs/history.md has the schema). No server, no other branch.

append reads what 'hotbudget record --out DIR' wrote for its HEAD (DIR/head:
bench.txt and each benchmark's profiles) and stores, per benchmark, the
time per op (median and range over the runs), B/op and allocs/op, or the
instructions per op under --instructions, and the functions holding at
least --min-share of the benchmark (at most --max-functions), with the
Go version, the machine and the date. A record of time also keeps its
runs as the time verdict reads them (each function's self samples and its
caller's, per run, and the benchmark results), from which record
--base-from-history judges a pull request against it; counting
instructions, every function's exact counts. Records beyond the newest
--keep-functions of the first-parent history lose their functions and
counts, those beyond the newest --keep-runs their runs; the benchmarks'
values stay. --commit (default HEAD) is the commit the record
belongs to: the record's HEAD. Counting instructions, append stores what
N ops execute, the difference record --instructions writes beside the
process of 2N ops; given only that whole process (start-up included, a
record of before the difference was written), it warns.

show prints each benchmark's series along the first-parent history of
--rev (default HEAD; the main branch's commits) and the change points since
--since: time by E-divisive means with a seeded permutation test, exact
counts (instructions, B/op, allocs/op) by steps beyond a tolerance.
--functions adds each function's self share (or self instructions). html
writes the same as one self-contained page of charts.

Share the history: git push origin refs/notes/hotbudget, and fetch it with
git fetch origin refs/notes/hotbudget:refs/notes/hotbudget.

Examples:

	hotbudget record --out perf HEAD~1 HEAD ./... ; hotbudget history append --out perf
	hotbudget history show --since v1.2.0 --format markdown
	hotbudget history html --out history.html
`

func (c *cli) history(args []string) int {
	if len(args) == 0 {
		return c.usageErr("history", "want a subcommand: append, show, html or prune")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stdout, historyUsage)
		return exitOK
	case "append":
		return c.historyAppend(args[1:])
	case "show", "html":
		return c.historyShow(args[0], args[1:])
	case "prune":
		return c.historyPrune(args[1:])
	}
	return c.usageErr("history", "unknown subcommand %q: want append, show, html or prune", textfmt.Name(args[0]))
}

// historyStore is the flags every history subcommand shares.
func historyStore(fs *cmdFlags) *string {
	return fs.String("ref", history.DefaultRef, "the notes `ref` the history lives in")
}

func (c *cli) historyAppend(args []string) int {
	fs := c.flagSet("history append", historyUsage)
	ref := historyStore(fs)
	var outs listFlag
	fs.Var(&outs, "out", "the `directory` hotbudget record --out wrote (its head/ is read); repeated, the shards of one record (record --shard K/N --out DIR)")
	rev := fs.String("commit", "HEAD", "the commit the record belongs to: the record's HEAD `revision`")
	keep := fs.Int("keep-functions", history.DefaultRetention.KeepFunctions, "keep functions in the newest `K` records of the first-parent history (negative: in all)")
	keepRuns := fs.Int("keep-runs", history.DefaultRetention.KeepRuns, "keep the runs of time (record --base-from-history's) in the newest `K` records, at most --keep-functions (0: as --keep-functions)")
	minShare := fs.String("min-share", "1%", "keep the functions holding at least this `share` of a benchmark")
	maxFuncs := fs.Int("max-functions", history.DefaultCompaction.MaxFunctions, "keep at most `n` functions a benchmark")
	counts := newChoice("module", "module", "all")
	fs.Var(counts, "counts", "with --instructions, keep the exact counts of the functions of the `module|all` (go list -m here; what record --base-from-history judges against: record's gate judges the module's functions)")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 || len(outs) == 0 {
		return c.usageErr("history append", "want --out DIR, the directory of a hotbudget record (or --out once per shard), and no arguments")
	}
	share, err := parsePercent(*minShare)
	if err != nil {
		return c.usageErr("history append", "--min-share: %v", err)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	commit, date, err := store.Commit(ctx, *rev)
	if err != nil {
		return c.inputErr("history append", err)
	}
	rec, whole, err := gate.ReadRecordOuts(ctx, outs, commit, *rev, counts.value == "module")
	if err != nil {
		return c.inputErr("history append", err)
	}
	if len(whole) > 0 {
		// Only the run of 2N ops, no counted difference beside it (a record
		// --instructions of a hotbudget before the difference was written):
		// its start-up, divided by 2N, moves with the N record calibrated,
		// so the same code gives another value at the next commit.
		fmt.Fprintf(c.stderr, "hotbudget history: warning: %s of %s counted as whole processes of 2N ops (start-up included; %s), without the counted difference of N ops (PKG/NAME.instructions-diff.pb.gz): their instructions per op move with the N record calibrated, and every such move is a step in the history; record again with this hotbudget's record --instructions, which writes the difference\n",
			textfmt.Plural(len(whole), "benchmark", "benchmarks"), strings.Join(outs, " "), textfmt.Line(whole[0]))
	}
	rec.Commit, rec.Date, rec.Recorded = commit, date, time.Now().UTC().Format(time.RFC3339)
	rec.Compact(history.Compaction{MinShare: share, MaxFunctions: *maxFuncs})
	data, err := rec.Marshal()
	if err != nil {
		return c.inputErr("history append", err)
	}
	if err := store.Put(ctx, rec); err != nil {
		return c.inputErr("history append", err)
	}
	pruned, err := store.Prune(ctx, commit, history.Retention{KeepFunctions: *keep, KeepRuns: *keepRuns})
	if err != nil {
		return c.inputErr("history append", err)
	}
	nf := 0
	for _, b := range rec.Benchmarks {
		nf += len(b.Functions)
	}
	fmt.Fprintf(c.stdout, "hotbudget history: %.12s: %s (%s, %s functions, %d bytes) under %s", commit,
		textfmt.Plural(len(rec.Benchmarks), "benchmark", "benchmarks"), rec.Instrument, textfmt.Count(float64(nf)), len(data), textfmt.Line(*ref))
	if len(pruned) > 0 {
		fmt.Fprintf(c.stdout, "; functions or runs pruned from %s", textfmt.Plural(len(pruned), "older record", "older records"))
	}
	fmt.Fprintf(c.stdout, "\nshare it with: git push origin %s\n", textfmt.Line(*ref))
	return exitOK
}

func (c *cli) historyShow(sub string, args []string) int {
	name := "history " + sub
	fs := c.flagSet(name, historyUsage)
	ref := historyStore(fs)
	rev := fs.String("rev", "HEAD", "read the first-parent history of this `revision`")
	since := fs.String("since", "", "list the changes after this `revision` (default: all)")
	functions := fs.Bool("functions", sub == "html", "the functions' series too")
	seed := fs.Uint64("seed", history.DefaultEDivisive.Seed, "seed of the permutation tests")
	format := newChoice("text", "text", "markdown", "json")
	out := fs.String("out", "", "write the page to this `file` (html; default stdout)")
	if sub == "show" {
		fs.Var(format, "format", "output `text|markdown|json`")
	}
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageErr(name, "unexpected arguments %q", pos)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	recs, commits, err := store.Load(ctx, *rev)
	if err != nil {
		return c.inputErr(name, err)
	}
	if len(recs) == 0 {
		return c.inputErr(name, fmt.Errorf("no records under %s on the first-parent history of %s (hotbudget history append adds them; git fetch origin %s:%s fetches them)",
			textfmt.Line(*ref), textfmt.Line(*rev), textfmt.Line(*ref), textfmt.Line(*ref)))
	}
	method := history.DefaultEDivisive
	method.Seed = *seed
	series := history.Build(recs, *functions)
	history.Analyze(recs, series, method)
	rep := &history.Report{Records: recs, Series: series, Method: method}
	if *since != "" {
		at, err := sinceIndex(ctx, store, recs, commits, *since)
		if err != nil {
			return c.inputErr(name, err)
		}
		rep.Since, rep.SinceRev = at, *since
	}
	if sub == "html" {
		if *out == "" {
			err = rep.WriteHTML(c.stdout) // through the Guard, as every report
		} else {
			err = atomicfile.Write(*out, func(f *os.File) error { return rep.WriteHTML(f) })
		}
	} else {
		switch format.value {
		case "markdown":
			err = rep.WriteMarkdown(c.stdout)
		case "json":
			err = writeHistoryJSON(c, rep)
		default:
			err = rep.WriteText(c.stdout)
		}
	}
	if err != nil {
		return c.inputErr(name, err)
	}
	return exitOK
}

// sinceIndex is the index of the first record after revision since on the
// first-parent history (commits, newest first).
func sinceIndex(ctx context.Context, store history.Notes, recs []*history.Record, commits []string, since string) (int, error) {
	hash, _, err := store.Commit(ctx, since)
	if err != nil {
		return 0, err
	}
	newer := map[string]bool{}
	for _, c := range commits {
		if c == hash {
			break
		}
		newer[c] = true
	}
	if len(newer) == len(commits) {
		return 0, fmt.Errorf("--since %s (%.12s) is not on the first-parent history read", textfmt.Line(since), hash)
	}
	for i, r := range recs {
		if newer[r.Commit] {
			return i, nil
		}
	}
	return len(recs), nil
}

// writeHistoryJSON writes the changes as JSON (schema
// hotbudget.history-show/v1) to the Guard of stdout, as diff and record
// write theirs: no raw control character, "##[" or "::" line reaches the
// log from a name in a note.
func writeHistoryJSON(c *cli, rep *history.Report) error {
	type change struct {
		Benchmark string  `json:"benchmark"`
		Function  string  `json:"function,omitempty"`
		Measure   string  `json:"measure"`
		Commit    string  `json:"commit"`
		Prev      string  `json:"prev"`
		Before    float64 `json:"before"`
		After     float64 `json:"after"`
		Change    float64 `json:"change"`
		P         float64 `json:"p,omitempty"`
		Context   string  `json:"context,omitempty"`
		By        string  `json:"by,omitempty"`
		// Functions are the names of those By names.
		Functions []string `json:"functions,omitempty"`
	}
	out := struct {
		Schema  string   `json:"schema"`
		Records int      `json:"records"`
		First   string   `json:"first"`
		Last    string   `json:"last"`
		Since   string   `json:"since,omitempty"`
		Method  string   `json:"method"`
		Changes []change `json:"changes"`
	}{Schema: "hotbudget.history-show/v1", Records: len(rep.Records), First: rep.Records[0].Commit, Last: rep.Records[len(rep.Records)-1].Commit,
		Since: rep.SinceRev, Method: rep.MethodLine(), Changes: []change{}}
	for _, sc := range rep.Changes() {
		ch := sc.Change
		out.Changes = append(out.Changes, change{Benchmark: sc.Series.Benchmark, Function: sc.Series.Function, Measure: sc.Series.Measure.Key,
			Commit: ch.Commit, Prev: ch.Prev, Before: ch.Before, After: ch.After, Change: ch.ChangePoint.Change(), P: ch.P, Context: ch.Context, By: ch.By, Functions: ch.Functions})
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (c *cli) historyPrune(args []string) int {
	fs := c.flagSet("history prune", historyUsage)
	ref := historyStore(fs)
	rev := fs.String("rev", "HEAD", "prune along the first-parent history of this `revision`")
	keep := fs.Int("keep-functions", history.DefaultRetention.KeepFunctions, "keep functions in the newest `K` records (negative: in all)")
	keepRuns := fs.Int("keep-runs", history.DefaultRetention.KeepRuns, "keep the runs of time in the newest `K` records, at most --keep-functions (0: as --keep-functions)")
	squash := fs.Bool("squash", false, "then replace the notes ref's own history by one commit, so that git gc frees what was pruned (pushing it needs +"+history.DefaultRef+")")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageErr("history prune", "unexpected arguments %q", pos)
	}
	ctx := context.Background()
	store := history.Notes{Ref: *ref}
	pruned, err := store.Prune(ctx, *rev, history.Retention{KeepFunctions: *keep, KeepRuns: *keepRuns})
	if err != nil {
		return c.inputErr("history prune", err)
	}
	fmt.Fprintf(c.stdout, "hotbudget history: functions or runs pruned from %s\n", textfmt.Plural(len(pruned), "record", "records"))
	if *squash {
		if err := store.Squash(ctx); err != nil {
			return c.inputErr("history prune", err)
		}
		fmt.Fprintf(c.stdout, "hotbudget history: %s squashed to one commit\n", textfmt.Line(*ref))
	}
	return exitOK
}
