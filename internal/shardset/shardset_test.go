package shardset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

func TestCheckKey(t *testing.T) {
	for _, key := range []string{
		"example.com/m BenchmarkA", "example.com/m/sub BenchmarkB/size=1", "gopkg.in/yaml.v3 BenchmarkX/a-b_c+d",
		"example.com/m BenchmarkÜ/日本",
	} {
		if err := CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q): %v", key, err)
		}
	}
	for key, want := range map[string]string{
		"example.com/m/../../x BenchmarkA":                       `element ".."`,
		"../x BenchmarkA":                                        `element ".."`,
		"/etc BenchmarkA":                                        `element ""`,
		"example.com//m BenchmarkA":                              `element ""`,
		"example.com/./m BenchmarkA":                             `element "."`,
		"example.com/m BenchmarkA/../..":                         `element ".."`,
		"example.com/m BenchmarkA/":                              `element ""`,
		"example.com\\m BenchmarkA":                              `'\\'`,
		"example.com/m BenchmarkA\x00":                           `'\x00'`,
		"example.com/m BenchmarkA\npkg: x":                       `'\n'`,
		"example.com/m BenchmarkA\u202e":                         `'\u202e'`,
		"example.com/m TestA":                                    "does not start with Benchmark",
		"example.com/m":                                          "want PACKAGE NAME",
		"example.com/m BenchmarkA B":                             "no space",
		"example.com/m Benchmark\xff":                            "not UTF-8",
		"example.com/m Benchmark" + strings.Repeat("x", MaxName): "longer than",
	} {
		if err := CheckKey(key); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckKey(%q): %v, want an error with %q", key, err, want)
		}
	}
}

func TestCheckNumbers(t *testing.T) {
	for _, kn := range [][2]int{{1, 1}, {1, 4}, {4, 4}, {1000, 1000}} {
		if err := CheckNumbers(kn[0], kn[1]); err != nil {
			t.Errorf("%v: %v", kn, err)
		}
	}
	for _, kn := range [][2]int{{0, 4}, {5, 4}, {1, 0}, {-1, 4}, {1, 1001}, {1, 100_000_000}, {1, -1 << 62}} {
		if err := CheckNumbers(kn[0], kn[1]); err == nil {
			t.Errorf("%v: no error", kn)
		}
	}
}

// set is n shards of keys, dealt as record deals them, every benchmark at
// both sides with its allocations, runs runs a side.
func set(keys []string, n, runs int) []*Shard {
	var shards []*Shard
	for k := 1; k <= n; k++ {
		p := part(keys, k, n)
		s := &Shard{Dir: fmt.Sprintf("perf-%d", k), K: k, N: n, Base: "b", Head: "h", Settings: "--runs=3",
			Benchmarks: keys, Recorded: p, At: map[string][]string{"base": p, "head": p}, Compared: p, Allocations: p,
			Spans: map[string][]Span{}}
		for _, side := range Sides {
			for run := 1; run <= runs; run++ {
				for _, key := range p {
					s.Spans[side] = append(s.Spans[side], Span{key, run, 0, 0})
				}
			}
		}
		shards = append(shards, s)
	}
	return shards
}

var keys = []string{"a BenchmarkA", "a BenchmarkB", "b BenchmarkC", "b BenchmarkD", "b BenchmarkE"}

func TestCheck(t *testing.T) {
	want := Want{Runs: 3, Allocations: true}
	if err := Check(set(keys, 2, 3), want); err != nil {
		t.Fatal(err)
	}
	// Given in any order, sorted.
	s := set(keys, 3, 3)
	s[0], s[2] = s[2], s[0]
	if err := Check(s, want); err != nil || s[0].K != 1 || s[2].K != 3 {
		t.Errorf("shards 3, 2, 1: %v, %d %d", err, s[0].K, s[2].K)
	}
	for _, tc := range []struct {
		name string
		edit func(s []*Shard) []*Shard
		want string
	}{
		{"one missing", func(s []*Shard) []*Shard { return s[1:] }, "shard 1 of 3 missing"},
		{"N of 10^8", func(s []*Shard) []*Shard {
			for _, x := range s {
				x.N = 100_000_000
			}
			return s
		}, "want 1 <= K <= N <= 1000"},
		{"most missing", func(s []*Shard) []*Shard {
			for _, x := range s {
				x.N = 1000
			}
			return s
		}, "shard 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 and 987 more of 1000 missing"},
		{"two records' N", func(s []*Shard) []*Shard { s[1].N = 4; return s }, "shards from two records: perf-2 is shard 2 of 4"},
		{"other commits", func(s []*Shard) []*Shard { s[2].Head = "x"; return s }, "shards from two records: perf-3 (shard 3) and perf-1 (shard 1) differ in their revisions"},
		{"other settings", func(s []*Shard) []*Shard { s[2].Settings = "--runs=4"; return s }, "differ in their flags"},
		{"duplicate", func(s []*Shard) []*Shard { s[1].K = 1; return s }, "perf-1 and perf-2 are both shard 1 of 3"},
		{"unsorted list", func(s []*Shard) []*Shard {
			l := []string{keys[1], keys[0], keys[2], keys[3], keys[4]}
			for _, x := range s {
				x.Benchmarks = l
			}
			return s
		}, "not sorted"},
		{"part not dealt", func(s []*Shard) []*Shard { s[0].Recorded = s[0].Recorded[:1]; return s }, "perf-1 (shard 1 of 3): recorded 1 benchmarks, not the 2"},
		{"compared missing", func(s []*Shard) []*Shard { s[0].Compared = s[0].Compared[1:]; return s }, `"a BenchmarkA": both revisions have it`},
		{"compared not both", func(s []*Shard) []*Shard {
			s[0].At = map[string][]string{"base": s[0].Recorded[:1], "head": s[0].Recorded}
			return s
		}, `"b BenchmarkD": compared, but not listed at both`},
		{"allocations missing", func(s []*Shard) []*Shard { s[1].Allocations = nil; return s }, `"a BenchmarkB": its allocations are missing`},
		{"a side unknown", func(s []*Shard) []*Shard { s[1].At["left"] = nil; return s }, `a side "left"`},
		{"a run past --runs", func(s []*Shard) []*Shard { s[1].Spans["base"][0].Run = 4; return s }, "run 4: want 1 to 3"},
		{"a run twice", func(s []*Shard) []*Shard {
			s[1].Spans["head"] = append(s[1].Spans["head"], s[1].Spans["head"][0])
			return s
		}, "run 1 is there twice"},
		{"a run missing", func(s []*Shard) []*Shard { s[1].Spans["head"] = s[1].Spans["head"][1:]; return s }, "the output of its run 1 at head is missing"},
		{"output of a side without it", func(s []*Shard) []*Shard {
			s[1].At["base"] = nil
			s[1].Compared, s[1].Allocations = nil, nil
			return s
		}, "which the base revision does not have"},
		{"negative bytes", func(s []*Shard) []*Shard { s[1].Spans["head"][0].Start = -1; return s }, "at bytes -1-0"},
	} {
		err := Check(tc.edit(set(keys, 3, 3)), want)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// --no-allocs: no allocations, and none may be listed... unless they
	// are the record's.
	s = set(keys, 2, 3)
	for _, x := range s {
		x.Allocations = nil
	}
	if err := Check(s, Want{Runs: 3}); err != nil {
		t.Errorf("--no-allocs: %v", err)
	}
	// Instructions: counted, no timed runs.
	s = set(keys, 2, 3)
	for _, x := range s {
		x.Counted, x.Compared, x.Allocations, x.Spans = x.Compared, nil, nil, nil
	}
	if err := Check(s, Want{Runs: 1, Instructions: true}); err != nil {
		t.Errorf("--instructions: %v", err)
	}
	s[1].Counted = s[1].Counted[1:]
	if err := Check(s, Want{Runs: 1, Instructions: true}); err == nil || !strings.Contains(err.Error(), "its counted instructions are missing") {
		t.Errorf("--instructions, a benchmark's counts missing: %v", err)
	}
}

func TestCheckBlock(t *testing.T) {
	block := "goos: linux\ngoarch: amd64\npkg: example.com/m\nBenchmarkB/size=1-2   \t    1000\t      1000 ns/op\nPASS\n"
	if err := CheckBlock([]byte(block), "example.com/m BenchmarkB/size=1", 1); err != nil {
		t.Error(err)
	}
	if err := CheckBlock([]byte(strings.Replace(block, "-2 ", " ", 1)), "example.com/m BenchmarkB/size=1", 1); err != nil {
		t.Errorf("GOMAXPROCS 1: %v", err)
	}
	for _, tc := range []struct {
		block, key string
		count      int
		want       string
	}{
		{block, "example.com/m BenchmarkB/size=1", 2, "holds 1 results, want 2"},
		{block, "example.com/m BenchmarkB", 1, `a result of "BenchmarkB/size=1-2"`},
		{block, "example.com/x BenchmarkB/size=1", 1, `a result of package "example.com/m"`},
		{"", "example.com/m BenchmarkB/size=1", 1, "holds 0 results"},
		{block + block, "example.com/m BenchmarkB/size=1", 1, "holds 2 results"},
		{"BenchmarkB/size=1-2 1000 x ns/op\n", "example.com/m BenchmarkB/size=1", 1, "holds 0 results"},
	} {
		if err := CheckBlock([]byte(tc.block), tc.key, tc.count); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckBlock(%q, %q, %d): %v, want %q", tc.block, tc.key, tc.count, err, tc.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.json")
	if err := os.WriteFile(path, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path); err != nil || len(b) != 2048 {
		t.Errorf("%d bytes, %v", len(b), err)
	}
	t.Setenv(membudget.InputEnv, "1KiB")
	if _, err := ReadFile(path); !errors.Is(err, membudget.ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("over HOTBUDGET_MAX_BYTES: %v", err)
	}
}

func TestCheckSpans(t *testing.T) {
	spans := []Span{{"a BenchmarkB", 1, 10, 25}, {"a BenchmarkA", 1, 0, 10}, {"a BenchmarkA", 2, 25, 40}}
	if err := CheckSpans(spans, 40); err != nil {
		t.Error(err)
	}
	if err := CheckSpans(nil, 0); err != nil {
		t.Errorf("no run, empty file: %v", err)
	}
	for _, tc := range []struct {
		spans []Span
		size  int
		want  string
	}{
		{spans, 41, "bytes 40-41 of 41 belong to no run"},
		{spans[:2], 40, "bytes 25-40 of 40 belong to no run"},
		{spans[1:], 40, `bytes 10-25 of 40 belong to no run ("a BenchmarkA"'s run 2 starts at 25)`},
		{append(slices.Clone(spans), Span{"a BenchmarkC", 1, 20, 30}), 40, "belong to two runs"},
		{spans, 30, "was the file or its runs' list changed?"},
		{nil, 5, "bytes 0-5 of 5 belong to no run"},
	} {
		if err := CheckSpans(tc.spans, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckSpans(%v, %d): %v, want %q", tc.spans, tc.size, err, tc.want)
		}
	}
}
