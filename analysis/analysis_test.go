package analysis_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

const corpus = "../testdata/corpus/pprof/"

// loadTable loads path with the public loaders and analyses it.
func loadTable(t *testing.T, path string) *analysis.Table {
	t.Helper()
	p, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// compareWithPprof checks every function of path against go tool pprof -top.
func compareWithPprof(t *testing.T, path string) {
	t.Helper()
	want := testutil.PprofTop(t, path)
	tab := loadTable(t, path)
	// pprof merges functions by name; we keep same-named functions of
	// different files apart (see the package doc). Where that happens, the
	// self times must still add up to pprof's flat.
	got := make(map[string][2]int64)
	dups := make(map[string]bool)
	for _, f := range tab.Functions {
		if _, dup := got[f.Name]; dup {
			dups[f.Name] = true
		}
		g := got[f.Name]
		got[f.Name] = [2]int64{g[0] + int64(f.Self), g[1] + int64(f.Total)}
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: pprof has %q, we do not", path, name)
			continue
		}
		if dups[name] {
			if g[0] != w[0] || g[1] < w[1] {
				t.Errorf("%s: %s (in several files): self sum %d, total sum %d; pprof says %d/%d", path, name, g[0], g[1], w[0], w[1])
			}
			continue
		}
		if g != w {
			t.Errorf("%s: %s: self/total = %d/%d ns, pprof says %d/%d", path, name, g[0], g[1], w[0], w[1])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: we have %q, pprof does not", path, name)
		}
	}
}

func TestMatchesPprofTop(t *testing.T) {
	for _, file := range []string{
		corpus + "sample.cpu",   // inlined frames
		corpus + "simple.prof",  // small Go CPU profile
		corpus + "large.cpu",    // 23k locations
		corpus + "pprof.out",    // converted from V8, period 0
		corpus + "go.crc32.cpu", // legacy binary format, no symbols
		corpus + "cppbench.cpu_no_samples_type",
		"../testdata/pprof/busy.pb.gz", // real profile from testdata/pprof/gen
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			compareWithPprof(t, file)
		})
	}
}

// TestSameNameDifferentFiles pins a deliberate difference from pprof: two
// functions that share a name but live in different files (here Go's
// runtime.nanotime compiled to wasm and the JavaScript one in wasm_exec.js)
// are two rows, not one.
func TestSameNameDifferentFiles(t *testing.T) {
	tab := loadTable(t, corpus+"pprof.out")
	rows := tab.Find("runtime.nanotime")
	if len(rows) != 2 || rows[0].File == rows[1].File {
		t.Fatalf("want two runtime.nanotime rows from different files, got %+v", rows)
	}
}

var sink [32]byte

//go:noinline
func spinHash(d time.Duration) {
	b := make([]byte, 4096)
	for end := time.Now().Add(d); time.Now().Before(end); {
		sink = sha256.Sum256(b)
	}
}

// TestMatchesPprofTopFreshProfile profiles this test binary, so the
// comparison also covers whatever the current Go runtime writes.
func TestMatchesPprofTopFreshProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profiling already on (go test -cpuprofile?): %v", err)
	}
	spinHash(300 * time.Millisecond)
	pprof.StopCPUProfile()
	path := filepath.Join(t.TempDir(), "fresh.pb.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	compareWithPprof(t, path)

	tab := loadTable(t, path)
	rows := tab.Find("github.com/hotbudget/hotbudget/analysis_test.spinHash")
	if len(rows) != 1 || rows[0].TotalShare < 0.5 {
		t.Errorf("spinHash should be on most stacks; got %+v", rows)
	}
}

// handProfile builds a small profile whose numbers are worked out by hand:
//
//	stack (root first)        samples  ns
//	main → a → b → a            2      20   recursion: a counted once per sample
//	main → a                    1      10
//	main → c → (inlined d)      3      30   one location, two lines: d innermost
//	(idle)                      4      40
//
//	self:  a 10+20=30? no: leaf of the first stack is a (20), second a (10) → a 30
//	       d 30, idle 40, main 0, b 0, c 0
//	total: main 60, a 30, b 20, c 30, d 30, idle 40; profile total 100.
func handProfile() *profile.Profile {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: "x.go", StartLine: int64(id)}
	}
	fMain, fA, fB, fC, fD, fIdle := fn(1, "main"), fn(2, "a"), fn(3, "b"), fn(4, "c"), fn(5, "d"), fn(6, "(idle)")
	loc := func(id uint64, fns ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fns {
			l.Line = append(l.Line, profile.Line{Function: f, Line: f.StartLine + 1})
		}
		return l
	}
	lMain, lA, lB, lCD, lIdle := loc(1, fMain), loc(2, fA), loc(3, fB), loc(4, fD, fC), loc(5, fIdle)
	s := func(n int64, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{n, n * 10}, Label: map[string][]string{"thread": {"main"}, "tid": {"1"}}}
	}
	idle := s(4, lIdle)
	idle.Label = map[string][]string{"thread": {"worker"}, "tid": {"2"}, "pid": {"7"}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10,
		Sample:     []*profile.Sample{s(2, lA, lB, lA, lMain), s(1, lA, lMain), s(3, lCD, lMain), idle},
		Location:   []*profile.Location{lMain, lA, lB, lCD, lIdle},
		Function:   []*profile.Function{fMain, fA, fB, fC, fD, fIdle},
	}
}

func rowsOf(tab *analysis.Table) map[string][4]int64 {
	m := make(map[string][4]int64)
	for _, f := range tab.Functions {
		m[f.Name] = [4]int64{int64(f.Self), int64(f.Total), f.SelfSamples, f.TotalSamples}
	}
	return m
}

func TestHandWorked(t *testing.T) {
	p := handProfile()
	before := p.String()
	tests := []struct {
		name      string
		opts      []analysis.Option
		total     int64
		want      map[string][4]int64
		firstName string
	}{
		{
			name:  "all samples; recursion counted once; inlined line is its own frame",
			total: 100,
			want: map[string][4]int64{
				"main": {0, 60, 0, 6}, "a": {30, 30, 3, 3}, "b": {0, 20, 0, 2},
				"c": {0, 30, 0, 3}, "d": {30, 30, 3, 3}, "(idle)": {40, 40, 4, 4},
			},
			firstName: "(idle)",
		},
		{
			name:  "drop synthetic removes idle from rows and total",
			opts:  []analysis.Option{analysis.Selection{DropSynthetic: true}},
			total: 60,
			want: map[string][4]int64{
				"main": {0, 60, 0, 6}, "a": {30, 30, 3, 3}, "b": {0, 20, 0, 2},
				"c": {0, 30, 0, 3}, "d": {30, 30, 3, 3},
			},
			firstName: "a", // ties with d on self and total; name order decides
		},
		{
			name:  "focus keeps samples through b; total stays the whole profile",
			opts:  []analysis.Option{analysis.Selection{Focus: regexp.MustCompile(`^b$`)}},
			total: 100,
			want:  map[string][4]int64{"main": {0, 20, 0, 2}, "a": {20, 20, 2, 2}, "b": {0, 20, 0, 2}},
		},
		{
			name:  "ignore drops samples through c",
			opts:  []analysis.Option{analysis.Selection{Ignore: regexp.MustCompile(`^c$`), DropSynthetic: true}},
			total: 60,
			want:  map[string][4]int64{"main": {0, 30, 0, 3}, "a": {30, 30, 3, 3}, "b": {0, 20, 0, 2}},
		},
		{
			name:  "thread by name",
			opts:  []analysis.Option{analysis.Selection{Threads: []string{"worker"}}},
			total: 40,
			want:  map[string][4]int64{"(idle)": {40, 40, 4, 4}},
		},
		{
			name:  "thread by tid",
			opts:  []analysis.Option{analysis.Selection{Threads: []string{"1"}}},
			total: 60,
			want: map[string][4]int64{
				"main": {0, 60, 0, 6}, "a": {30, 30, 3, 3}, "b": {0, 20, 0, 2},
				"c": {0, 30, 0, 3}, "d": {30, 30, 3, 3},
			},
		},
		{
			name:  "process by pid",
			opts:  []analysis.Option{analysis.Selection{Processes: []string{"7"}}},
			total: 40,
			want:  map[string][4]int64{"(idle)": {40, 40, 4, 4}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := analysis.Functions(p, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if int64(tab.Total) != tc.total {
				t.Errorf("Total = %d, want %d", tab.Total, tc.total)
			}
			got := rowsOf(tab)
			if len(got) != len(tc.want) {
				t.Errorf("rows = %v, want %v", got, tc.want)
			}
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("%s: self,total,selfN,totalN = %v, want %v", name, got[name], w)
				}
			}
			if tc.firstName != "" && tab.Functions[0].Name != tc.firstName {
				t.Errorf("first row %q, want %q", tab.Functions[0].Name, tc.firstName)
			}
			for _, f := range tab.Functions {
				if want := float64(f.Self) / float64(tab.Total); f.SelfShare != want {
					t.Errorf("%s: SelfShare %v, want %v", f.Name, f.SelfShare, want)
				}
			}
		})
	}
	if p.String() != before {
		t.Error("Functions modified the caller's profile")
	}
}

func TestSampleTypeErrors(t *testing.T) {
	p := handProfile()
	if _, err := analysis.Functions(p, analysis.Selection{SampleType: "alloc_space"}); err == nil || !strings.Contains(err.Error(), `no sample type "alloc_space" (have samples, cpu)`) {
		t.Errorf("unknown sample type: err = %v", err)
	}
	if _, err := analysis.Functions(p, analysis.Selection{SampleType: "2"}); err == nil || !strings.Contains(err.Error(), "sample index 2 is outside the range [0..1]") {
		t.Errorf("index out of range: err = %v", err)
	}
	p.SampleType[1] = &profile.ValueType{Type: "temperature", Unit: "kelvin"}
	if _, err := analysis.Functions(p); !errors.Is(err, analysis.ErrWrongUnit) || !strings.Contains(err.Error(), "temperature/kelvin is neither a time, bytes nor a count") {
		t.Errorf("kelvin profile: err = %v, want ErrWrongUnit", err)
	}
	p.SampleType[1] = &profile.ValueType{Type: "alloc_space", Unit: "bytes"}
	tab, err := analysis.Functions(p)
	if err != nil || tab.Unit != analysis.UnitBytes || tab.Total != 100 || tab.Format(tab.Total) != "100B" {
		t.Errorf("bytes profile: %+v, %v; want 100 bytes", tab, err)
	}
	if tab, err = analysis.Functions(p, analysis.Selection{SampleType: "0"}); err != nil || tab.Unit != analysis.UnitCount || tab.SampleType != "samples/count" {
		t.Errorf("sample index 0: %+v, %v; want samples/count", tab, err)
	}
	p.SampleType[1] = &profile.ValueType{Type: "wall", Unit: "milliseconds"}
	tab, err = analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(tab.Total) != 100*time.Millisecond {
		t.Errorf("milliseconds not converted: total %v", tab.Total)
	}
}

func TestDefaultSampleType(t *testing.T) {
	p := handProfile()
	p.DefaultSampleType = "samples"
	// The default type is honoured: a count, shown as one.
	if tab, err := analysis.Functions(p); err != nil || tab.Unit != analysis.UnitCount || tab.SampleType != "samples/count" {
		t.Errorf("default type samples: %+v, %v; want a table of samples/count", tab, err)
	}
	tab, err := analysis.Functions(p, analysis.Selection{SampleType: "cpu"})
	if err != nil || tab.Total != 100 {
		t.Errorf("explicit cpu: total %v, err %v", tab, err)
	}
}
