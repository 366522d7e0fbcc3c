package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// historyRepo makes a git repository of n empty commits, makes it the
// working directory, and returns the commits, oldest first.
func historyRepo(t *testing.T, n int) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for k, v := range map[string]string{"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"} {
		t.Setenv(k, v)
	}
	t.Chdir(dir)
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	var commits []string
	for i := range n {
		git("commit", "-q", "--allow-empty", "-m", fmt.Sprint("commit ", i))
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return commits
}

// fakeRecordOut writes what hotbudget record --out writes for its head:
// bench.txt with runs results and each run's CPU profile of the
// benchmark, where parse takes parseNs and the rest 200ns of each op,
// allocating allocs objects of 16 bytes.
func fakeRecordOut(t *testing.T, dir, commit, bench string, runs int, parseNs float64, allocs int) {
	t.Helper()
	head := filepath.Join(dir, "head")
	var txt strings.Builder
	fmt.Fprintf(&txt, "goos: linux\ngoarch: amd64\npkg: example.com/m\ncpu: Test CPU @ 2GHz\n")
	for r := range runs {
		jitter := 1 + 0.01*float64((r*7)%5-2) // ±2%
		nsOp := (parseNs + 200) * jitter
		fmt.Fprintf(&txt, "%s-2   \t    1000\t%10.1f ns/op\t%8d B/op\t%8d allocs/op\n", bench, nsOp, 16*allocs, allocs)
		fn := []*profile.Function{{ID: 1, Name: "example.com/m.parse"}, {ID: 2, Name: "example.com/m." + bench}}
		locs := []*profile.Location{{ID: 1, Line: []profile.Line{{Function: fn[0]}}}, {ID: 2, Line: []profile.Line{{Function: fn[1]}}}}
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 100000,
			Function: fn, Location: locs,
			Sample: []*profile.Sample{
				{Location: []*profile.Location{locs[0], locs[1]}, Value: []int64{1, int64(1000 * parseNs * jitter)}},
				{Location: []*profile.Location{locs[1]}, Value: []int64{1, int64(1000 * 200 * jitter)}},
			},
		}
		meta.Set(p, meta.Record{Name: fmt.Sprintf("example.com/m %s at head HEAD (%.12s), run %d", bench, commit, r+1),
			Build: "go1.26.8 linux/amd64", WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: 1000}}})
		path := gate.LeafProfile(head, "example.com/m", bench, r+1)
		if err := gate.WriteProfile(path, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(head, "bench.txt"), []byte(txt.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendHistory records 16 commits: parse 20% slower from commit 8 on,
// one more allocation a op from commit 12 on, and returns the commits.
func appendHistory(t *testing.T, name string) []string {
	commits := historyRepo(t, 16)
	for i, c := range commits {
		parse := 800.0
		if i >= 8 {
			parse = 1000
		}
		allocs := 2
		if i >= 12 {
			allocs = 3
		}
		// Noise between commits: ±1%.
		parse *= 1 + 0.005*float64((i*3)%5-2)
		out := filepath.Join(t.TempDir(), "perf")
		fakeRecordOut(t, out, c, name, 3, parse, allocs)
		got := runOK(t, 0, "history", "append", "--out", out, "--commit", c, "--keep-functions", "10")
		if !strings.Contains(got, "1 benchmark (time, 2 functions,") {
			t.Fatalf("append: %s", got)
		}
	}
	return commits
}

// TestHistoryAppendShow appends 16 records and finds the slower parse at
// commit 8 (by E-divisive means) and the allocation at 12 (a step), in
// text, Markdown and JSON, since a commit or in all; old records lose
// their functions; a record of another commit is refused.
func TestHistoryAppendShow(t *testing.T) {
	commits := appendHistory(t, "BenchmarkParse")
	text := runOK(t, 0, "history", "show", "--functions")
	for _, want := range []string{
		fmt.Sprintf("%.12s", commits[8]) + " 20", "(time/op): example.com/m BenchmarkParse +",
		fmt.Sprintf("%.12s", commits[12]) + " 20", "(allocs/op): example.com/m BenchmarkParse +50.0% (2 -> 3)",
		"(B/op): example.com/m BenchmarkParse +50.0% (32B -> 48B)",
		"example.com/m.parse in example.com/m BenchmarkParse: self share",
		"E-divisive means",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("show lacks %q:\n%s", want, text)
		}
	}
	md := runOK(t, 0, "history", "show", "--since", commits[10], "--format", "markdown")
	if !strings.Contains(md, "### hotbudget history: 2 changes since ") || strings.Contains(md, "time/op | \\+") {
		t.Errorf("markdown since commit 10: want the two allocation steps alone:\n%s", md)
	}
	var js struct {
		Records int
		Changes []struct{ Measure, Commit string }
	}
	if err := json.Unmarshal([]byte(runOK(t, 0, "history", "show", "--format", "json")), &js); err != nil {
		t.Fatal(err)
	}
	if js.Records != 16 || len(js.Changes) != 3 || js.Changes[2].Measure != "ns_op" || js.Changes[2].Commit != commits[8] {
		t.Errorf("json: %+v", js)
	}
	// The oldest 6 records lost their functions, the newest 10 kept them.
	note := func(c string) string {
		out, err := exec.Command("git", "notes", "--ref=hotbudget", "show", c).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if old, recent := note(commits[5]), note(commits[6]); strings.Contains(old, `"functions"`) || !strings.Contains(recent, `"functions"`) {
		t.Errorf("pruning: record 5 %s\nrecord 6 %s", old, recent)
	}
	// The newest records keep their runs too (--keep-runs, 10 by
	// default): what record --base-from-history reads.
	newest := note(commits[15])
	rec, err := history.Unmarshal([]byte(newest))
	if err != nil || !rec.HasTimeRuns() || len(rec.Benchmarks[0].TimeRuns.Runs) != 3 {
		t.Fatalf("the newest record keeps no runs (%v):\n%s", err, newest)
	}
	rec.PruneRuns()
	if data, _ := rec.Marshal(); len(data) > 700 {
		t.Errorf("a record of one benchmark and 2 functions takes %d bytes without its runs", len(data))
	}
	t.Logf("the newest record: %d bytes with its runs", len(newest))
	// A record made at another HEAD is refused.
	out := filepath.Join(t.TempDir(), "perf")
	fakeRecordOut(t, out, commits[3], "BenchmarkParse", 1, 800, 2)
	runOK(t, 2, "history", "append", "--out", out, "--commit", commits[4])
	// prune --squash leaves one notes commit.
	runOK(t, 0, "history", "prune", "--keep-functions", "0", "--squash")
	if got := note(commits[15]); strings.Contains(got, `"functions"`) {
		t.Errorf("after prune --keep-functions 0: %s", got)
	}
}

// TestHistoryHTMLInBrowser opens the page of 16 records whose benchmark's
// name is hostile: it draws the three series of the benchmark with their
// change points, the functions' series when opened, and runs no script of
// the name.
func TestHistoryHTMLInBrowser(t *testing.T) {
	commits := appendHistory(t, `BenchmarkX/<img_src=x_onerror=alert(1)>`)
	page := filepath.Join(t.TempDir(), "history.html")
	runOK(t, 0, "history", "html", "--out", page)
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "<img") {
		t.Fatalf("the name is not escaped")
	}
	p := newPage(t)
	p.open(page)
	type st struct{ Series, Markers, Functions int }
	s := eval[st](p, `({series: window.__hotbudget.series, markers: window.__hotbudget.markers, functions: window.__hotbudget.functionSeries})`)
	if s.Series != 3 || s.Markers != 3 || s.Functions != 2 {
		t.Errorf("page state %+v: want 3 series (time/op, B/op, allocs/op), 3 change points, 2 functions", s)
	}
	// The time/op chart's marker sits between commits 7 and 8 and is drawn.
	r := eval[rect](p, fmt.Sprintf(`(() => { const e = document.querySelector('svg[data-measure="time/op"] path.cpmark[data-commit="%s"]'); const r = e.getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()`, commits[8]))
	if r.W < 5 || r.H < 5 {
		t.Errorf("the change point's marker is %+v", r)
	}
	if imgs := eval[int](p, `document.images.length`); imgs != 0 {
		t.Errorf("%d images on the page: the name became markup", imgs)
	}
	if text := eval[string](p, `document.body.innerText`); !containsAll(text, "<img_src=x_onerror=alert(1)>", "allocs/op", "changes: 3") {
		t.Errorf("page text:\n%s", text)
	}
	p.click("details.functions summary")
	p.wait("the functions' charts", `document.querySelector('details.functions').open && document.querySelector('details.functions svg.series').getBoundingClientRect().height > 50`)
	p.screenshot("testdata/html/history.png")
	p.noErrors()
}

// TestHistoryAppendShards appends the record of a commit from the --out of
// each shard of a sharded record: their benchmarks together, a shard that
// recorded none skipped; a shard given twice is refused.
func TestHistoryAppendShards(t *testing.T) {
	commits := historyRepo(t, 1)
	dir := t.TempDir()
	a, b, empty := filepath.Join(dir, "perf-1"), filepath.Join(dir, "perf-2"), filepath.Join(dir, "perf-3")
	fakeRecordOut(t, a, commits[0], "BenchmarkParse", 3, 800, 2)
	fakeRecordOut(t, b, commits[0], "BenchmarkRender", 3, 500, 1)
	if err := os.MkdirAll(filepath.Join(empty, "head"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, gate.ShardManifest), []byte(`{"recorded":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runOK(t, 0, "history", "append", "--out", a, "--out", empty, "--out", b); !strings.Contains(got, ": 2 benchmarks (time,") {
		t.Errorf("append of three shards: %s", got)
	}
	note, err := exec.Command("git", "notes", "--ref=hotbudget", "show", commits[0]).Output()
	if err != nil || !strings.Contains(string(note), "BenchmarkParse") || !strings.Contains(string(note), "BenchmarkRender") {
		t.Errorf("the record lacks a shard's benchmark (%v):\n%s", err, note)
	}
	runOK(t, 2, "history", "append", "--out", a, "--out", a)
}

// fakeCountsOut writes what record --instructions writes for its head: the
// whole process of 2N ops of one benchmark (start-up included) and, with
// diffToo, the counted difference of N ops beside it, with a negative value
// as real ones have, as a shard (with shard.json naming the head commit);
// without, the output of a record of before the difference was written.
func fakeCountsOut(t *testing.T, dir, commit string, ops int64, diffToo bool) {
	t.Helper()
	prof := func(name string, work int64, parse, other int64) *profile.Profile {
		fn := []*profile.Function{{ID: 1, Name: "example.com/m.parse"}, {ID: 2, Name: "runtime.schedinit"}}
		locs := []*profile.Location{{ID: 1, Line: []profile.Line{{Function: fn[0]}}}, {ID: 2, Line: []profile.Line{{Function: fn[1]}}}}
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
			PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}, Period: 1,
			Function: fn, Location: locs,
			Sample: []*profile.Sample{{Location: locs[:1], Value: []int64{parse}}, {Location: locs[1:], Value: []int64{other}}},
		}
		p.Comments = meta.MarkExact(nil)
		meta.Set(p, meta.Record{Name: name, Build: "go1.26.8 linux/amd64", WorkUnit: meta.WorkOp, Instrument: "callgrind", Runs: []meta.Run{{Work: float64(work)}}})
		return p
	}
	pkg := filepath.Join(dir, "head", "example.com", "m")
	// 1000 instructions an op in parse, a start-up of 1e6.
	if err := gate.WriteProfile(filepath.Join(pkg, "BenchmarkParse.instructions.pb.gz"), prof("BenchmarkParse at head (the whole process)", 2*ops, 2000*ops, 1e6)); err != nil {
		t.Fatal(err)
	}
	if !diffToo {
		return
	}
	// The difference of two processes: the runtime did less in the second
	// (a negative value, which the loaders refuse), parse's caller more.
	d := prof("BenchmarkParse at head", ops, 1000*ops, -2*ops)
	caller := &profile.Function{ID: 3, Name: "example.com/m.BenchmarkParse"}
	loc := &profile.Location{ID: 3, Line: []profile.Line{{Function: caller}}}
	d.Function, d.Location = append(d.Function, caller), append(d.Location, loc)
	d.Sample = append(d.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{2 * ops}})
	if err := gate.WriteProfile(filepath.Join(pkg, "BenchmarkParse.instructions-diff.pb.gz"), d); err != nil {
		t.Fatal(err)
	}
	sf, _ := json.Marshal(map[string]any{"schema": "hotbudget.shard/v2", "shard": 1, "of": 1, "head": map[string]string{"revision": "HEAD", "commit": commit}})
	if err := os.WriteFile(filepath.Join(dir, gate.ShardManifest), sf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryAppendInstructions: a record --instructions output holding
// only the whole processes of 2N ops (a record of before the counted
// difference was written) is stored with a warning that its
// values move with N (1000 instructions an op read as 1100 at N = 5000 and
// 1050 at N = 10000); a shard's counted difference is stored as it is,
// 1000 at any N, its negative values read (pprof's parser refuses them),
// and its shard.json's head commit is checked against --commit; a
// difference counted at N = 1 is refused.
func TestHistoryAppendInstructions(t *testing.T) {
	commits := historyRepo(t, 3)
	appendOut := func(commit string, ops int64, diffToo bool, want int) (string, string) {
		out := filepath.Join(t.TempDir(), "perf")
		fakeCountsOut(t, out, commit, ops, diffToo)
		var stdout, stderr bytes.Buffer
		if code := run([]string{"history", "append", "--out", out, "--commit", commits[0], "--counts", "all"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != want {
			t.Fatalf("append: exit %d, want %d\n%s%s", code, want, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	instr := func() float64 {
		out, err := exec.Command("git", "notes", "--ref=hotbudget", "show", commits[0]).Output()
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Benchmarks []struct {
				InstrOp float64 `json:"instr_op"`
			}
		}
		if err := json.Unmarshal(out, &r); err != nil || len(r.Benchmarks) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		return r.Benchmarks[0].InstrOp
	}
	_, stderr := appendOut(commits[0], 5000, false, 0)
	if !strings.Contains(stderr, "warning: 1 benchmark of") || !strings.Contains(stderr, "instructions-diff.pb.gz") {
		t.Errorf("no warning for whole processes: %q", stderr)
	}
	if got := instr(); got != 1100 {
		t.Errorf("whole process at N = 5000: %v an op, want 1100", got)
	}
	for _, ops := range []int64{5000, 10000} {
		if _, stderr := appendOut(commits[0], ops, true, 0); stderr != "" {
			t.Errorf("a warning with the counted difference: %s", stderr)
		}
		if got := instr(); got != 1000 {
			t.Errorf("counted difference at N = %d: %v an op, want 1000", ops, got)
		}
	}
	// A shard of another HEAD is refused.
	appendOut(commits[1], 5000, true, 2)
	// So is a difference of 1 and 2 ops (go test's run1 makes it two ops):
	// fastjson's ObjectGet, calibrated to 1 on a loaded machine, read
	// 1213366 instructions an op instead of 4300.
	if _, stderr := appendOut(commits[0], 1, true, 2); !strings.Contains(stderr, "counted at N = 1") {
		t.Errorf("N = 1: %s", stderr)
	}
}

// TestHistoryShowRefusesNotes stores a note beyond the size limit, and a
// record dated 2099, and checks history show refuses each with exit 2
// naming the commit and what is wrong, the large note unread (in
// well under a second; it took 10.6 s and 2.1 GB at 500 MB before).
func TestHistoryShowRefusesNotes(t *testing.T) {
	commits := historyRepo(t, 2)
	fake := filepath.Join(t.TempDir(), "perf")
	fakeRecordOut(t, fake, commits[0], "BenchmarkParse", 3, 800, 2)
	runOK(t, 0, "history", "append", "--out", fake, "--commit", commits[0])
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"schema":"hotbudget.history/v1","commit":"`+commits[1]+`","benchmarks":[`+strings.Repeat(`{"name":"m BenchmarkX"},`, history.MaxNoteBytes/23)+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := gitOut(t, "hash-object", "-w", big)
	gitOut(t, "notes", "--ref", history.DefaultRef, "add", "-f", "-C", blob, commits[1])
	t0 := time.Now()
	var stdout, stderr strings.Builder
	code := run([]string{"history", "show"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 2 || !strings.Contains(stderr.String(), "the note of "+commits[1]) || !strings.Contains(stderr.String(), "beyond the 16 MiB a note may hold: refused unread") {
		t.Errorf("a note of %d MiB: exit %d\n%s", (history.MaxNoteBytes+(1<<20))>>20, code, stderr.String())
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("refusing the large note took %s", d)
	}
	// A record of 2099, written as it is (Put refuses it).
	r, err := history.Unmarshal([]byte(gitOut(t, "notes", "--ref", history.DefaultRef, "show", commits[0])))
	if err != nil {
		t.Fatal(err)
	}
	r.Commit, r.Recorded = commits[1], "2099-01-01T00:00:00Z"
	if err := (history.Notes{}).Put(t.Context(), r); err == nil || !strings.Contains(err.Error(), "recorded 2099-01-01T00:00:00Z, after now") {
		t.Errorf("Put of a record of 2099: %v", err)
	}
	data, _ := r.Marshal()
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	blob = gitOut(t, "hash-object", "-w", big)
	gitOut(t, "notes", "--ref", history.DefaultRef, "add", "-f", "-C", blob, commits[1])
	stderr.Reset()
	code = run([]string{"history", "show"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 2 || !strings.Contains(stderr.String(), "the note of "+commits[1]) || !strings.Contains(stderr.String(), "refused: recorded 2099-01-01T00:00:00Z, after now") {
		t.Errorf("a record of 2099: exit %d\n%s", code, stderr.String())
	}
}

// TestHistoryShowEscapes stores 24 records whose benchmark's name holds
// a workflow command and a right-to-left override, its time 20% slower
// from record 12 on, and checks that history show's JSON (and its page
// on stdout) escape them as diff's and record's JSON do (through the
// Guard): no "##[" or raw U+202E reaches the log, and the JSON still
// reads back the name.
func TestHistoryShowEscapes(t *testing.T) {
	commits := historyRepo(t, 24)
	const name = "example.com/m Benchmark##[error]evil\u202etxt.exe"
	for i, c := range commits {
		ns := 1000 + float64((i*37)%11)
		if i >= 12 {
			ns *= 1.2
		}
		r := &history.Record{Schema: history.Schema, Commit: c, Recorded: "2026-11-28T09:05:00Z", Instrument: history.InstrumentTime,
			Benchmarks: []history.Benchmark{{Name: name, Runs: 5, NsPerOp: &history.Spread{Median: ns, Min: ns * 0.98, Max: ns * 1.03}}}}
		if err := (history.Notes{}).Put(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	js := runOK(t, 0, "history", "show", "--format", "json")
	for what, out := range map[string]string{"json": js, "html": runOK(t, 0, "history", "html"), "text": runOK(t, 0, "history", "show")} {
		if strings.Contains(out, "##[") || strings.Contains(out, "\u202e") {
			t.Errorf("%s: the name is not escaped:\n%.2000s", what, out)
		}
	}
	var got struct {
		Changes []struct{ Benchmark string } `json:"changes"`
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Changes) == 0 || got.Changes[0].Benchmark != name {
		t.Errorf("the JSON (%v) reads %+v, want the change of %q:\n%s", err, got.Changes, name, js)
	}
}

// gitOut runs git in the working directory and returns its output.
func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
