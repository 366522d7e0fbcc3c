package v8

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

const corpus = "../../testdata/corpus"

func parseFile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	return testutil.ParseFile(t, Parse, path)
}

func table(t *testing.T, p *profile.Profile) *analysis.Table {
	t.Helper()
	tb, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// row is an expected function: Name (and Line, when the name is shared).
type row struct {
	name        string
	line        int64 // 1-based; checked when non-zero
	self, total time.Duration
}

const us = time.Microsecond

// find returns the one row of tb with name (and line, when given).
func find(t *testing.T, tb *analysis.Table, name string, line int64) analysis.Function {
	t.Helper()
	var got []analysis.Function
	for _, f := range tb.Functions {
		if f.Name == name && (line == 0 || f.Line == line) {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d rows for %s line %d, want 1; rows: %+v", len(got), name, line, tb.Functions)
	}
	return got[0]
}

// checkRows fails t unless each of want is one row of tb with its self and
// total.
func checkRows(t *testing.T, tb *analysis.Table, want []row) {
	t.Helper()
	for _, r := range want {
		f := find(t, tb, r.name, r.line)
		if time.Duration(f.Self) != r.self || time.Duration(f.Total) != r.total {
			t.Errorf("%s line %d: self %v total %v, want %v and %v", r.name, r.line, f.Self, f.Total, r.self, r.total)
		}
	}
}

// TestSeedExamples pins self and total for the example profiles of the
// article in seeds/000 (and its tower/flame pair), worked out by hand. A sample
// lasts until the next one; the last lasts the average interval
// (last-first)/(n-1); (root) is not a frame except for samples of the root.
func TestSeedExamples(t *testing.T) {
	tests := []struct {
		file     string
		total    time.Duration
		period   time.Duration
		rows     []row
		warnings string // substring of a warning, if any is expected
	}{
		// times 1, 101, 201 µs; the last sample lasts (201-1)/2 = 100 µs.
		{"minimal", 300 * us, 100 * us, []row{
			{"runMainESM", 93, 100 * us, 300 * us},
			{"main-work", 0, 0, 200 * us},
			{"child-work-1", 0, 100 * us, 100 * us},
			{"child-work-2", 0, 100 * us, 100 * us},
		}, ""},
		// samples [1,2,2,1], 100 µs apart: two samples of (root), two of runMainESM.
		{"timing-data", 400 * us, 100 * us, []row{
			{"(root)", 0, 200 * us, 200 * us},
			{"runMainESM", 0, 200 * us, 200 * us},
		}, ""},
		// times 4,5,8,10,15,16,20,22; durations 1,3,2,5,1,4,2 and 18/7 µs = 2571 ns.
		// (root): samples 0,2,4,6 = 1+2+1+2; work-1: 1,5 = 3+4; work-2: 3,7 = 5+2.571.
		// Median interval of 1,1,2,2,3,4,5 is 2 µs.
		{"time-deltas", 20*us + 571, 2 * us, []row{
			{"(root)", 0, 6 * us, 6 * us},
			{"work-1", 0, 7 * us, 7 * us},
			{"work-2", 0, 5*us + 2571, 5*us + 2571},
		}, ""},
		// 16 samples 10 µs apart: [1,2,4,5,4,2,1,1,3,6,7,6,7,6,3,1].
		{"samples", 160 * us, 10 * us, []row{
			{"(root)", 0, 40 * us, 40 * us},
			{"work-1", 0, 20 * us, 50 * us},
			{"helper", 0, 20 * us, 30 * us},
			{"compute", 0, 10 * us, 10 * us},
			{"work-2", 0, 20 * us, 70 * us},
			{"fetch-data", 0, 30 * us, 50 * us},
			{"parse-result", 0, 20 * us, 20 * us},
		}, ""},
		// The article's tower: [1,3,3,1], and flame: [1,2,3,2,1], 100 µs apart.
		{"tower", 400 * us, 100 * us, []row{
			{"(root)", 0, 200 * us, 200 * us},
			{"outer", 0, 0, 200 * us},
			{"inner", 0, 200 * us, 200 * us},
		}, ""},
		{"flame", 500 * us, 100 * us, []row{
			{"(root)", 0, 200 * us, 200 * us},
			{"outer", 0, 200 * us, 300 * us},
			{"inner", 0, 100 * us, 100 * us},
		}, ""},
		// Node 6 is in node 5's children but says parent 4: children win, as
		// in DevTools. One sample at 1 µs; it lasts until endTime (10 µs).
		{"parent-child", 9 * us, 0, []row{
			{"runMainESM", 0, 0, 9 * us},
			// child-1 has no samples: no row.
			{"child-2", 0, 0, 9 * us},
			{"child-2-1", 0, 0, 9 * us},
			{"child-2-1-1", 0, 9 * us, 9 * us},
		}, "node 6: parent 4 disagrees with node 5"},
		// [1,3,4,1], 10 µs apart; work-2 (2.js) is called by work-1 (1.js).
		{"source-location", 40 * us, 10 * us, []row{
			{"(root)", 0, 20 * us, 20 * us},
			{"work-1", 0, 0, 20 * us},
			{"child-work-1", 0, 10 * us, 10 * us},
			{"work-2", 0, 10 * us, 10 * us},
		}, ""},
		// Five functions named run, told apart by url and line (two share a url).
		{"url", 60 * us, 10 * us, []row{
			{"(root)", 0, 10 * us, 10 * us},
			{"run", 11, 10 * us, 10 * us},
			// run-script-3.mjs:12 and run-script-2.mjs:12, 10 µs each: see
			// the subtest "url/same line, other file".
			{"run", 13, 10 * us, 10 * us},
			{"run", 14, 10 * us, 10 * us},
		}, ""},
		// Synthetic frames are kept, so self times sum to the total.
		{"synthetic", 600 * us, 100 * us, []row{
			{"(root)", 0, 100 * us, 100 * us},
			{"(program)", 0, 100 * us, 100 * us},
			{"main-work", 0, 100 * us, 200 * us},
			{"child-work-1", 0, 100 * us, 100 * us},
			{"(garbage collector)", 0, 100 * us, 100 * us},
			{"(idle)", 0, 100 * us, 100 * us},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := parseFile(t, filepath.Join("testdata", tt.file+".cpuprofile"))
			tb := table(t, p)
			if time.Duration(tb.Total) != tt.total {
				t.Errorf("total = %v, want %v", tb.Total, tt.total)
			}
			if time.Duration(p.DurationNanos) != tt.total {
				t.Errorf("DurationNanos = %v, want %v", time.Duration(p.DurationNanos), tt.total)
			}
			if time.Duration(p.Period) != tt.period {
				t.Errorf("Period = %v, want %v", time.Duration(p.Period), tt.period)
			}
			var selfSum time.Duration
			for _, f := range tb.Functions {
				selfSum += time.Duration(f.Self)
			}
			if selfSum != time.Duration(tb.Total) {
				t.Errorf("self times sum to %v, want the total %v", selfSum, tb.Total)
			}
			checkRows(t, tb, tt.rows)
			checkWarning(t, p, tt.warnings)
		})
	}
	t.Run("url/same line, other file", func(t *testing.T) {
		tb := table(t, parseFile(t, "testdata/url.cpuprofile"))
		files := map[string]analysis.Function{}
		for _, f := range tb.Functions {
			if f.Name == "run" && f.Line == 12 {
				files[f.File] = f
			}
		}
		if len(files) != 2 || files["file:///run-script-3.mjs"].Column != 2 || files["file:///run-script-2.mjs"].Column != 3 {
			t.Errorf("run at line 12: got %+v, want one in run-script-3.mjs (col 2) and one in run-script-2.mjs (col 3)", files)
		}
		for file, f := range files {
			if time.Duration(f.Self) != 10*us || time.Duration(f.Total) != 10*us {
				t.Errorf("run at %s:12: self %v total %v, want 10µs and 10µs", file, f.Self, f.Total)
			}
		}
	})
}

func checkWarning(t *testing.T, p *profile.Profile, want string) {
	t.Helper()
	ws := pbuild.Warnings(p)
	if want == "" {
		if len(ws) != 0 {
			t.Errorf("unexpected warnings %q", ws)
		}
		return
	}
	for _, w := range ws {
		if strings.Contains(w, want) {
			return
		}
	}
	t.Errorf("warnings %q, want one containing %q", ws, want)
}

// TestOwnFixtures pins rules the article does not show.
func TestOwnFixtures(t *testing.T) {
	tests := []struct {
		file, why string
		total     time.Duration
		rows      []row
		warnings  string
	}{
		// times 100 (A), 110 (B), 106 (C): sorted A, C, B; A lasts 6 µs,
		// C 4 µs, B the average (110-100)/2 = 5 µs.
		{"negative-deltas", "negative deltas: absolute times, stable sort", 15 * us, []row{
			{"A", 0, 6 * us, 6 * us}, {"B", 0, 5 * us, 5 * us}, {"C", 0, 4 * us, 4 * us},
		}, "sample times go backwards"},
		// Links only from parent, root last, negative and large ids, a
		// numeric scriptId, unknown keys at every level. Times 0, 10, 20.
		{"parent-only", "parent links, arbitrary ids", 30 * us, []row{
			{"leaf", 5, 20 * us, 20 * us}, {"mid", 3, 10 * us, 30 * us},
		}, ""},
		// No samples: hitCount × (1400-1000)/(3+1) µs.
		{"hitcount", "hitCount fallback", 400 * us, []row{
			{"hot", 1, 300 * us, 300 * us}, {"cold", 10, 100 * us, 100 * us},
		}, "no samples: using hitCount"},
		{"cdp", "Profiler.stop result wrapper", 20 * us, []row{
			{"wrapped", 1, 20 * us, 20 * us},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := parseFile(t, filepath.Join("testdata", tt.file+".cpuprofile"))
			tb := table(t, p)
			if time.Duration(tb.Total) != tt.total {
				t.Errorf("%s: total = %v, want %v", tt.why, tb.Total, tt.total)
			}
			checkRows(t, tb, tt.rows)
			checkWarning(t, p, tt.warnings)
		})
	}
}

// TestCorpusSimple: 29 samples win over a hitCount total of 28.
// Sample i is at t[i] = startTime + sum(timeDeltas[:i+1]): t[0] = 163140610861,
// t[28] = 163140645206, 34345 µs later. The last sample lasts the average
// interval 34345/28 µs = 1226607 ns, so the total is 35571607 ns. Sample 0 (the
// anonymous function) lasts until sample 1: 1060 µs. The other 28 samples
// are all d (14 under b, 14 under c).
func TestCorpusSimple(t *testing.T) {
	p := parseFile(t, corpus+"/cpuprofile/simple.cpuprofile")
	tb := table(t, p)
	if tb.TotalSamples != 29 {
		t.Errorf("samples = %d, want 29 (samples win over hitCount's 28)", tb.TotalSamples)
	}
	want := 34345*us + 1226607
	if time.Duration(tb.Total) != want || time.Duration(p.DurationNanos) != want {
		t.Errorf("total %v, duration %v, want %v", tb.Total, time.Duration(p.DurationNanos), want)
	}
	anon := find(t, tb, "(anonymous)", 1)
	if time.Duration(anon.Self) != 1060*us || time.Duration(anon.Total) != want {
		t.Errorf("(anonymous): self %v total %v, want 1.06ms and %v", anon.Self, anon.Total, want)
	}
	d := find(t, tb, "d", 14)
	if d.SelfSamples != 28 || time.Duration(d.Self) != want-1060*us {
		t.Errorf("d: %d samples, self %v; want 28 and %v", d.SelfSamples, d.Self, want-1060*us)
	}
	// d under b: samples 1..14 last from t[1] = 163140611921 to t[15] = 163140628923.
	if b := find(t, tb, "b", 6); time.Duration(b.Total) != (163140628923-163140611921)*us {
		t.Errorf("b total %v, want %v", b.Total, (163140628923-163140611921)*us)
	}
}

// TestCorpusLegacy reads the old head/timestamps layout. Its startTime and
// endTime are both 163140 (seconds), so the span comes from the 30
// timestamps; with one more timestamp than samples, sample i is at
// timestamps[i] and the last timestamp ends the last sample (as DevTools
// reads it). Lines are already 1-based.
func TestCorpusLegacy(t *testing.T) {
	p := parseFile(t, corpus+"/cpuprofile/example.cpuprofile")
	tb := table(t, p)
	const span = (163140645206 - 163140599286) * us // 45920 µs
	if time.Duration(tb.Total) != span || time.Duration(p.DurationNanos) != span {
		t.Errorf("total %v, duration %v, want %v", tb.Total, time.Duration(p.DurationNanos), span)
	}
	if tb.TotalSamples != 29 {
		t.Errorf("samples = %d, want 29", tb.TotalSamples)
	}
	checkRows(t, tb, []row{
		{"(anonymous)", 0, 11575 * us, span},            // lineNumber 0: unknown
		{"d", 13, span - 11575*us, span - 11575*us},     // 1-based as given
		{"b", 5, 0, (163140627649 - 163140610861) * us}, // ts[15]-ts[1]
		{"c", 9, 0, (163140645206 - 163140627649) * us}, // ts[29]-ts[15]
	})
	checkWarning(t, p, "legacy")
}

// TestCorpusSucrase: anonymous functions stay apart by url and line;
// lineNumber -1 becomes line 0; samples (17138) win over hitCount (17837).
func TestCorpusSucrase(t *testing.T) {
	p := parseFile(t, corpus+"/cpuprofile/sucrase.cpuprofile.gz")
	tb := table(t, p)
	if tb.TotalSamples != 17138 {
		t.Errorf("samples = %d, want 17138", tb.TotalSamples)
	}
	type fl struct {
		file string
		line int64
	}
	anon := map[fl]bool{}
	for _, f := range tb.Functions {
		if f.Name == "(anonymous)" {
			anon[fl{f.File, f.Line}] = true
		}
	}
	jsx := "/Users/alanpierce/code/sucrase/build/sucrase-babylon/plugins/jsx/index.js"
	if len(anon) < 5 || !anon[fl{jsx, 0}] || !anon[fl{jsx, 53}] {
		t.Errorf("anonymous functions by file and line: %v; want jsx/index.js at lines 0 (from -1) and 53 apart", anon)
	}
	indexOf := find(t, tb, "indexOf", 0)
	if indexOf.File != "" || indexOf.Line != 0 {
		t.Errorf("indexOf: file %q line %d, want no file and line 0", indexOf.File, indexOf.Line)
	}
	gc := find(t, tb, "(garbage collector)", 0)
	if gc.SelfSamples != 2717 {
		t.Errorf("(garbage collector) samples = %d, want 2717", gc.SelfSamples)
	}
}

// TestCorpusWasmMatchesPprof cross-checks wasm.prof with pprof.out, which
// wasmbrowsertest converted from it at 100 µs per sample: per function
// name, our sample counts must equal pprof.out's value / 100 µs.
func TestCorpusWasmMatchesPprof(t *testing.T) {
	ours := table(t, parseFile(t, corpus+"/cpuprofile/wasm.prof.gz"))
	theirs := table(t, testutil.ReadPprof(t, corpus+"/pprof/pprof.out"))
	byName := func(tb *analysis.Table) map[string][]analysis.Function {
		m := map[string][]analysis.Function{}
		for _, f := range tb.Functions {
			m[f.Name] = append(m[f.Name], f)
		}
		return m
	}
	o, th := byName(ours), byName(theirs)
	matched := 0
	for name, fs := range th {
		if len(fs) != 1 || len(o[name]) != 1 || name == "(root)" {
			continue
		}
		matched++
		want := fs[0]
		got := o[name][0]
		if got.SelfSamples != int64(time.Duration(want.Self)/(100*us)) || got.TotalSamples != int64(time.Duration(want.Total)/(100*us)) {
			t.Errorf("%s: %d self / %d total samples, pprof.out has %v / %v (at 100µs each)", name, got.SelfSamples, got.TotalSamples, want.Self, want.Total)
		}
	}
	if matched < 50 {
		t.Errorf("only %d functions matched by name", matched)
	}
	idle := find(t, ours, "(idle)", 0)
	if idle.SelfSamples != 4937 {
		t.Errorf("(idle) = %d samples, want 4937", idle.SelfSamples)
	}
}

func TestFileLabels(t *testing.T) {
	tests := []struct{ name, pid, tid, seq string }{
		{"/x/CPU.20250510.134625.51430.0.001.cpuprofile", "51430", "0", "001"},
		{"CPU.20250510.135416.51430.2.003.cpuprofile", "51430", "2", "003"},
		{"profile.cpuprofile", "", "", ""},
		{"CPU.2025.1.x.0.001.cpuprofile", "", "", ""},
		{"CPU.20250510.134625.51430.0.001.json", "", "", ""},
	}
	for _, tt := range tests {
		l := FileLabels(tt.name)
		var got [3]string
		if l != nil {
			m := *l
			for i, k := range []string{pbuild.LabelPID, pbuild.LabelTID, pbuild.LabelSeq} {
				if v := m[k]; len(v) == 1 {
					got[i] = v[0]
				}
			}
		}
		if got != [3]string{tt.pid, tt.tid, tt.seq} {
			t.Errorf("FileLabels(%q) = %v, want pid %q tid %q seq %q", tt.name, got, tt.pid, tt.tid, tt.seq)
		}
	}
}
