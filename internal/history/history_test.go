package history

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// gitRepo makes a repository with n commits on main and returns its
// directory and the commits, oldest first.
func gitRepo(t *testing.T, n int) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	var commits []string
	for i := range n {
		git("commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", i))
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return dir, commits
}

func float(v float64) *float64 { return &v }

// record makes a record of commit with one benchmark whose time is ns and
// two functions.
func record(commit string, ns, allocs float64) *Record {
	r := &Record{Schema: Schema, Commit: commit, Date: "2026-01-02T03:04:05Z", Instrument: InstrumentTime, Go: "go1.26.8", Machine: "linux/amd64",
		Benchmarks: []Benchmark{{Name: "example.com/m BenchmarkParse", Runs: 5, NsPerOp: &Spread{ns, ns * 0.98, ns * 1.03},
			BytesPerOp: float(64 * allocs), AllocsPerOp: float(allocs),
			Functions: []Function{{Name: "example.com/m.parse", Share: 0.61234, PerOp: ns * 0.61234}, {Name: "runtime.memmove", Share: 0.004, PerOp: 1}}}}}
	r.Compact(DefaultCompaction)
	return r
}

// withRuns gives the benchmark of a record made by record its runs: one
// result each, whose times are the record's median, min and max.
func withRuns(r *Record) *Record {
	b := &r.Benchmarks[0]
	tr := &TimeRuns{SampleTypes: []string{"samples/count"}, Functions: []string{"m.parse"}}
	for _, ns := range []float64{b.NsPerOp.Median, b.NsPerOp.Min, b.NsPerOp.Median, b.NsPerOp.Max, b.NsPerOp.Median} {
		tr.Runs = append(tr.Runs, TimeRun{Ops: 10, Samples: []int64{0, -1, 7},
			Results: []string{fmt.Sprintf("BenchmarkParse-2 10 %g ns/op %g B/op %g allocs/op", ns, *b.BytesPerOp, *b.AllocsPerOp)}})
	}
	b.TimeRuns = tr
	return r
}

// TestNotesAppendPruneSquash stores records as notes, reads them back in
// the order of the first-parent history, prunes old functions and squashes
// the notes ref.
func TestNotesAppendPruneSquash(t *testing.T) {
	dir, commits := gitRepo(t, 6)
	ctx := context.Background()
	n := Notes{Dir: dir}
	for i, c := range commits {
		if i == 2 {
			continue // a commit without a record
		}
		r := record(c, 1000+float64(i), 3)
		withRuns(r)
		if err := n.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	recs, hist, err := n.Load(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || len(hist) != 6 || recs[0].Commit != commits[0] || recs[4].Commit != commits[5] {
		t.Fatalf("loaded %d records of %d commits; want 5, oldest first", len(recs), len(hist))
	}
	if f := recs[0].Benchmarks[0].Functions; len(f) != 1 || f[0].Share != 0.6123 || f[0].PerOp != 612 {
		t.Errorf("compacted functions %+v, want parse alone, rounded", f)
	}
	// The note is plain JSON that git prints as it is.
	out, err := n.git(ctx, nil, "notes", "--ref", DefaultRef, "show", commits[0])
	if err != nil || !bytes.HasPrefix(out, []byte(`{"schema":"hotbudget.history/v1","commit":"`+commits[0])) {
		t.Errorf("git notes show: %v\n%s", err, out)
	}
	pruned, err := n.Prune(ctx, "main", Retention{KeepFunctions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != 3 || pruned[0] != commits[0] {
		t.Errorf("pruned %v, want the 3 oldest records", pruned)
	}
	// Load drops the runs and counts: Get reads them.
	get := func() []*Record {
		t.Helper()
		var out []*Record
		for _, c := range commits {
			r, err := n.Get(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				out = append(out, r)
			}
		}
		return out
	}
	recs, _, _ = n.Load(ctx, "main")
	if recs[4].HasTimeRuns() || !recs[4].HasFunctions() {
		t.Errorf("Load kept the runs (%v) or dropped the functions (%v)", recs[4].HasTimeRuns(), recs[4].HasFunctions())
	}
	recs = get()
	for i, r := range recs {
		if want := i >= 3; r.HasFunctions() != want || r.HasTimeRuns() != want || r.Benchmarks[0].NsPerOp == nil {
			t.Errorf("record %d: functions %v, runs %v, want %v, and its benchmark kept", i, r.HasFunctions(), r.HasTimeRuns(), want)
		}
	}
	// The runs go sooner than the functions: the newest record alone
	// keeps them.
	if pruned, err = n.Prune(ctx, "main", Retention{KeepFunctions: 2, KeepRuns: 1}); err != nil || len(pruned) != 1 || pruned[0] != commits[4] {
		t.Errorf("pruned %v (%v), want the runs of %.7s", pruned, err, commits[4])
	}
	recs = get()
	if r := recs[3]; !r.HasFunctions() || r.HasTimeRuns() || !recs[4].HasTimeRuns() || recs[4].Benchmarks[0].TimeRuns.Runs[0].Samples[2] != 7 {
		t.Errorf("after pruning runs: record 3 functions %v runs %v, record 4 runs %+v", r.HasFunctions(), r.HasTimeRuns(), recs[4].Benchmarks[0].TimeRuns)
	}
	if err := n.Squash(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := n.git(ctx, nil, "rev-list", "--count", DefaultRef); strings.TrimSpace(string(out)) != "1" {
		t.Errorf("after squash the notes ref has %s commits, want 1", out)
	}
	if again, _, err := n.Load(ctx, "main"); err != nil || len(again) != 5 {
		t.Errorf("after squash: %d records, %v", len(again), err)
	}
}

// TestReportFindsAndEscapes builds the series of 24 records whose time
// rises 20% at record 12 and whose allocations step at record 18, and
// checks every output names both changes and escapes a hostile name.
func TestReportFindsAndEscapes(t *testing.T) {
	var recs []*Record
	for i := range 24 {
		ns := 1000 + float64((i*37)%11) // noise of about 1%
		if i >= 12 {
			ns *= 1.2
		}
		allocs := 3.0
		if i >= 18 {
			allocs = 4
		}
		r := record(strings.Repeat(fmt.Sprintf("%02x", i+1), 20), ns, allocs)
		r.Benchmarks[0].Name = "example.com/m Benchmark<script>alert(1)</script>\x1b[31m"
		recs = append(recs, r)
	}
	series := Build(recs, true)
	Analyze(recs, series, DefaultEDivisive)
	rep := &Report{Records: recs, Series: series, Method: DefaultEDivisive}
	var found []string
	for _, c := range rep.Changes() {
		found = append(found, fmt.Sprintf("%s@%d", c.Series.Measure.Key, c.At))
	}
	if want := "[b_op@18 allocs_op@18 ns_op@12]"; fmt.Sprint(found) != want {
		t.Errorf("changes %v, want %s", found, want)
	}
	var text, md, page bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String(), "html": page.String()} {
		if strings.Contains(out, "\x1b") || name == "html" && strings.Contains(out, "<script>alert") {
			t.Errorf("%s: the benchmark's name is not escaped:\n%s", name, out)
		}
		if !strings.Contains(out, "20.0%") || !strings.Contains(out, "33.3%") {
			t.Errorf("%s: lacks the +20%% time and +33.3%% allocations changes:\n%s", name, out)
		}
	}
	if !strings.Contains(md.String(), "`example.com/m Benchmark<script>") {
		t.Errorf("markdown: the name is not a code span:\n%s", md.String())
	}
	if !strings.Contains(text.String(), `\x1b[31m`) {
		t.Errorf("text: the escape is not shown:\n%s", text.String())
	}
	// Since record 15: only the allocation steps.
	rep.Since = 15
	if got := len(rep.Changes()); got != 2 {
		t.Errorf("changes since record 15: %d, want 2", got)
	}
}

// TestExactWobbleDrawnFlat: fastjson's ObjectGet counted 4256, 4257 and
// 4256 instructions an op at unchanged commits (the runtime's varying work,
// within the 0.5% tolerance: no change point), then 4300 (+1%, a change).
// The sparkline and the chart draw the wobble flat, not from the bottom to
// the top, and the step as a step; time, which is noisy, keeps its full
// range.
func TestExactWobbleDrawnFlat(t *testing.T) {
	var recs []*Record
	for i := range 4 {
		recs = append(recs, record(strings.Repeat(fmt.Sprintf("%02x", i+1), 20), 1000, 3))
	}
	s := &Series{Measure: MeasureInstr}
	for i, v := range []float64{4256, 4257, 4256, 4300} {
		s.Points = append(s.Points, Point{Record: i, Value: v, Lo: v, Hi: v})
	}
	s.Changes = []Change{{ChangePoint: ChangePoint{Index: 3, Before: 4256, After: 4300}}}
	if got := []rune(s.spark()); got[0] != got[1] || got[1] != got[2] || got[3] == got[2] {
		t.Errorf("sparkline %q: want the first three alike, the fourth higher", string(got))
	}
	s.Points, s.Changes = s.Points[:3], nil
	if got := []rune(s.spark()); got[0] != got[2] || got[1]-got[0] > 1 {
		t.Errorf("sparkline of the wobble alone %q: want it flat, within a block", string(got))
	}
	rep := &Report{Records: recs}
	c := rep.chart(s, 200)
	var y0, y1 float64
	fmt.Sscan(c.Points[0].Y, &y0)
	fmt.Sscan(c.Points[1].Y, &y1)
	if d := y0 - y1; d < 0 || d > 0.1*200 {
		t.Errorf("chart: 4256 at y %v, 4257 at y %v: want them within a tenth of the height", y0, y1)
	}
	if got := Sparkline([]float64{1, 2}); got != "▁█" {
		t.Errorf("Sparkline (no measure) %q: want the full range", got)
	}
}

// TestInstructionsJudgedByFunctions: fastjson's Validate/medium at commits
// that did not change it counted the same functions to the instruction
// (validateValue 7371, skipWS 2365, ...) while its total moved -1.1% and
// +2.0% (the runtime's varying work, divided by N): no change point. Where
// parseRawNumber really changed (868 -> 990 of 30000, +0.4% of the total)
// the function and the benchmark change at that commit; a function that
// loses 5 instructions of 55 is a change too (above 0.01% of the
// benchmark, 3), one that moves by less than that is not (record's rule).
// Where a record lost its functions, the total steps at 0.5%.
func TestInstructionsJudgedByFunctions(t *testing.T) {
	totals := []float64{30000, 29670, 30600, 30130, 30133, 30133, 30300, 30310}
	raw := []float64{868, 868, 868, 990, 990, 990, 990, 990}
	parse := []float64{55, 55, 55, 55, 50, 50, 50, 50}
	var recs []*Record
	for i := range totals {
		r := &Record{Schema: Schema, Commit: strings.Repeat(fmt.Sprintf("%02x", i+1), 20), Instrument: InstrumentInstructions,
			Benchmarks: []Benchmark{{Name: "m BenchmarkParse", Runs: 1, InstrPerOp: float(totals[i]), Functions: []Function{
				{Name: "m.validateValue", Share: 0.2, PerOp: 7371}, {Name: "m.parseRawNumber", Share: 0.03, PerOp: raw[i]},
				{Name: "m.Parse", Share: 0.012, PerOp: parse[i]}}}}}
		if i >= 6 {
			r.Benchmarks[0].Functions = nil // pruned
		}
		recs = append(recs, r)
	}
	series := Build(recs, true)
	Analyze(recs, series, DefaultEDivisive)
	got := map[string][]int{}
	for _, s := range series {
		for _, c := range s.Changes {
			got[s.Function+" "+s.Measure.Key] = append(got[s.Function+" "+s.Measure.Key], c.Index)
		}
	}
	// The benchmark: at 3 (parseRawNumber) and 4 (Parse); 5 -> 6 (no
	// functions at 6) is +0.6%, a step; 6 -> 7 +0.03%, none.
	want := map[string][]int{" instr_op": {3, 4, 6}, "m.parseRawNumber self_instr": {3}, "m.Parse self_instr": {4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	// The benchmark's change names the function's.
	var text bytes.Buffer
	if err := (&Report{Records: recs, Series: series, Method: DefaultEDivisive}).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "; by m.parseRawNumber +14.1% (868 -> 990)") {
		t.Errorf("the benchmark's change does not name parseRawNumber's:\n%s", text.String())
	}
	// The page lists the benchmark's three changes, not the functions'
	// again.
	var page bytes.Buffer
	if err := (&Report{Records: recs, Series: series, Method: DefaultEDivisive}).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), `<tr><td class="name nw">`); n != 3 {
		t.Errorf("the page's table has %d changes, want 3", n)
	}
}
