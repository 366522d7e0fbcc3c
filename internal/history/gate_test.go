package history

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// countRecord is a record of record --instructions as history append keeps
// it: every function's exact self count in ops iterations of one
// benchmark (self, by name), the module's (CountsOf) kept as Counts, all
// of them as Functions, compacted.
func countRecord(commit string, ops int64, self map[string]int64) *Record {
	var total int64
	for _, n := range self {
		total += n
	}
	perOp := float64(total) / float64(ops)
	b := Benchmark{Name: "example.com/m BenchmarkDecode/string", Runs: 1, Ops: ops, CountTotal: total, InstrPerOp: &perOp}
	for name, n := range self {
		b.Functions = append(b.Functions, Function{Name: name, Share: float64(n) / float64(total), PerOp: float64(n) / float64(ops)})
		if strings.HasPrefix(name, "example.com/m.") {
			b.Counts = append(b.Counts, Count{Name: name, N: n})
		}
	}
	r := &Record{Schema: Schema, Commit: commit, Date: "2026-11-28T00:00:00Z", Instrument: InstrumentInstructions,
		CountsOf: []string{"example.com/m"}, Benchmarks: []Benchmark{b}}
	r.Compact(DefaultCompaction)
	return r
}

// TestChangePointsWhereRecordGates: history marked a comment-only commit
// of BurntSushi/toml a change point of BenchmarkDecode/string, "+0.1%
// (2481464 -> 2483038); by runtime.mallocgcSmallScanNoHeader +0.5%", a
// runtime function that record shows and does not gate; its page drew the
// marker between two commits, with the function column empty. Here four
// commits of counts in which only the runtime's functions move (the
// collector's work, by up to 3% of themselves and 0.4% of the benchmark)
// have no change point; at the fifth, the module's decode (2.4% of the
// benchmark) executes 2% more, and that commit alone is a change point,
// of the benchmark and of decode, naming decode, drawn on that commit,
// its function column filled.
func TestChangePointsWhereRecordGates(t *testing.T) {
	const ops = 100
	malloc := []int64{20_000_000, 20_100_000, 20_700_000, 20_286_000, 20_300_000}
	sysmon := []int64{1_000_000, 1_030_000, 990_000, 1_010_000, 1_000_000}
	decode := []int64{6_000_000, 6_000_000, 6_000_000, 6_000_000, 6_120_000} // +2% at the fifth
	var recs []*Record
	for i := range malloc {
		recs = append(recs, countRecord(strings.Repeat(fmt.Sprintf("%02x", i+1), 20), ops, map[string]int64{
			"runtime.mallocgcSmallScanNoHeader": malloc[i], "runtime.sysmon": sysmon[i],
			"example.com/m.lex": 220_000_000, "example.com/m.decode": decode[i], "example.com/m.tiny": 4_000}))
	}
	check := func(t *testing.T, recs []*Record, wantAt int) *Report {
		t.Helper()
		series := Build(recs, true)
		Analyze(recs, series, DefaultEDivisive)
		rep := &Report{Records: recs, Series: series, Method: DefaultEDivisive}
		var got []string
		drawn := false
		for _, s := range series {
			if strings.HasPrefix(s.Function, "runtime.") {
				drawn = true
			}
			for _, c := range s.Changes {
				got = append(got, fmt.Sprintf("%s %s at %d by %q", s.Function, s.Measure.Key, s.Points[c.Index].Record, c.Functions))
			}
		}
		if !drawn {
			t.Error("the runtime's functions are not drawn")
		}
		var want []string
		if wantAt >= 0 {
			want = []string{
				fmt.Sprintf(" instr_op at %d by [\"example.com/m.decode\"]", wantAt),
				fmt.Sprintf("example.com/m.decode self_instr at %d by []", wantAt),
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("change points %q, want %q", got, want)
		}
		return rep
	}
	t.Run("runtime alone", func(t *testing.T) { check(t, recs[:4], -1) })
	t.Run("counts", func(t *testing.T) { check(t, recs, 4) })
	// As Notes.Load returns them: without the counts, from the
	// functions kept (decode's 2.4% among them).
	for _, r := range recs {
		r.Benchmarks[0].Counts = nil
	}
	t.Run("runtime alone, loaded", func(t *testing.T) { check(t, recs[:4], -1) })
	rep := check(t, recs, 4)
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	changes, _, _ := strings.Cut(text.String(), "series (")
	if !strings.Contains(changes, "changes: 2\n") || !strings.Contains(changes, "; by example.com/m.decode +2.0% (60000 -> 61200)") || strings.Contains(changes, "runtime.") {
		t.Errorf("history show:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	// One row: the function's change is its benchmark's, named there.
	rows := regexp.MustCompile(`<tr><td class="name nw">([0-9a-f]+)</td><td class="nw">[^<]*</td><td class="name">([^<]*)</td><td class="name">([^<]*)</td>`).FindAllStringSubmatch(html, -1)
	if len(rows) != 1 || rows[0][1] != short(recs[4].Commit) || rows[0][3] != "example.com/m.decode" {
		t.Errorf("the page's changes %q: want one, at %s, its function column example.com/m.decode", rows, short(recs[4].Commit))
	}
	// The markers are on the fifth commit, the last of the x axis (x =
	// 748), not between the fourth and the fifth (664.5).
	markers := regexp.MustCompile(`<line class="cp" x1="([0-9.]+)"`).FindAllStringSubmatch(html, -1)
	if len(markers) != 2 {
		t.Fatalf("%d markers drawn, want 2 (the benchmark's and decode's)", len(markers))
	}
	for _, m := range markers {
		if m[1] != num(padLeft+plotW) {
			t.Errorf("a marker at x %s, want %s (the commit that made the change)", m[1], num(padLeft+plotW))
		}
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| `example.com/m BenchmarkDecode/string` | `example.com/m.decode` | instructions/op |") {
		t.Errorf("markdown's function column:\n%s", md.String())
	}
}

// TestChangePointsEveryFunction: a record whose counts are every
// function's (history append --counts all: no CountsOf) gates every
// function, as record --gate . does: the runtime's step is a change.
func TestChangePointsEveryFunction(t *testing.T) {
	var recs []*Record
	for i, m := range []int64{20_000_000, 21_000_000} {
		r := countRecord(strings.Repeat(fmt.Sprintf("%02x", i+1), 20), 100, map[string]int64{"runtime.mallocgc": m, "example.com/m.lex": 200_000_000})
		r.CountsOf = nil
		r.Benchmarks[0].Counts = append(r.Benchmarks[0].Counts, Count{Name: "runtime.mallocgc", N: m})
		recs = append(recs, r)
	}
	series := Build(recs, true)
	Analyze(recs, series, DefaultEDivisive)
	for _, s := range series {
		if s.Function == "" && (len(s.Changes) != 1 || fmt.Sprint(s.Changes[0].Functions) != "[runtime.mallocgc]") {
			t.Errorf("the benchmark's changes %+v, want one by runtime.mallocgc", s.Changes)
		}
	}
}
