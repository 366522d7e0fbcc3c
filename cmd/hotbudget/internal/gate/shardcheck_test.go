package gate

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// editShard rewrites dir's shard.json through edit, on its JSON as maps and
// lists.
func editShard(t testing.TB, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, shardManifest)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// without is list (a JSON list) without the entries drop says.
func without(list any, drop func(any) bool) []any {
	return slices.DeleteFunc(slices.Clone(list.([]any)), drop)
}

func isKey(key string) func(any) bool {
	return func(v any) bool {
		if m, ok := v.(map[string]any); ok {
			return m["benchmark"] == key
		}
		return v == key
	}
}

// setting sets name in a shard's settings.
func setting(m map[string]any, name string, v any) {
	m["settings"].(map[string]any)[name] = v
}

const benchA = "example.com/m BenchmarkA"

// Every edit of one field of real shards (two of the eight benchmarks of
// fakeRecord, whose complete set fails: BenchmarkA regressed) is refused
// with exit 2 naming the shard and what is wrong; none passes. On main at
// 1afcfb3 the first (a benchmark's results removed) passed with exit 0,
// the third (its allocations removed) exited 1 without its allocation
// verdict, and N = 10^8 ran out of memory listing the missing shards.
func TestMergeTampered(t *testing.T) {
	rec := fakeRecord(t, 5)
	args := []string{"--runs", "5", "main", "HEAD", "./..."}
	// Written once, copied for each edit.
	orig := t.TempDir()
	rec.writeShards(t, orig, 2, args)
	fresh := func(t *testing.T) []string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(orig)); err != nil {
			t.Fatal(err)
		}
		return []string{filepath.Join(dir, "shard-1"), filepath.Join(dir, "shard-2")}
	}
	if _, stderr, code := mergeOut(t, fresh(t)...); code != exitFail {
		t.Fatalf("the set unedited: exit %d, want 1\n%s", code, stderr)
	}
	both := func(f func(m map[string]any, k int)) func([]string) {
		return func(dirs []string) {
			for k, d := range dirs {
				editShard(t, d, func(m map[string]any) { f(m, k+1) })
			}
		}
	}
	first := func(f func(m map[string]any)) func([]string) {
		return func(dirs []string) { editShard(t, dirs[0], f) }
	}
	dropSpans := func(m map[string]any, drop func(any) bool) {
		for side, spans := range m["bench"].(map[string]any) {
			m["bench"].(map[string]any)[side] = without(spans, drop)
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(dirs []string)
		shard int // the shard the error names (1, 2), 0: none
		want  string
	}{
		{"a benchmark's results removed", first(func(m map[string]any) {
			m["compared"] = without(m["compared"], isKey(benchA))
			m["allocations"] = without(m["allocations"], isKey(benchA))
			dropSpans(m, isKey(benchA))
		}), 1, `"example.com/m BenchmarkA": both revisions have it, but its runs' profiles are not listed`},
		{"a benchmark's results and sides removed", first(func(m map[string]any) {
			m["compared"] = without(m["compared"], isKey(benchA))
			m["allocations"] = without(m["allocations"], isKey(benchA))
			dropSpans(m, isKey(benchA))
			for side, list := range m["at"].(map[string]any) {
				m["at"].(map[string]any)[side] = without(list, isKey(benchA))
			}
		}), 1, `"example.com/m BenchmarkA": at neither revision: its results are missing`},
		{"a benchmark's allocations removed", first(func(m map[string]any) {
			m["allocations"] = without(m["allocations"], isKey(benchA))
		}), 1, `"example.com/m BenchmarkA": its allocations are missing`},
		{"allocations of one side removed", first(func(m map[string]any) {
			m["allocations"].([]any)[0].(map[string]any)["head"] = nil
		}), 1, "the allocations of example.com/m BenchmarkA lack the head side"},
		{"allocations of no work", first(func(m map[string]any) {
			m["allocations"].([]any)[0].(map[string]any)["head"].(map[string]any)["Work"] = 0
		}), 1, "the allocations of example.com/m BenchmarkA at head: work 0, want a positive number of ops"},
		{"of = 10^8", both(func(m map[string]any, k int) {
			m["of"] = 100_000_000
		}), 1, "shard 1 of 100000000: want 1 <= K <= N <= 1000"},
		{"shard numbers: shard 2 says it is shard 1", both(func(m map[string]any, k int) {
			m["shard"] = 1
		}), 1, "are both shard 1 of 2"},
		{"shard numbers: shard 2 says 2 of 3", both(func(m map[string]any, k int) {
			if k == 2 {
				m["of"] = 3
			}
		}), 2, "shards from two records"},
		{"shard numbers: shard 3 of 2", first(func(m map[string]any) {
			m["shard"] = 3
		}), 1, "shard 3 of 2: want 1 <= K <= N <= 1000"},
		{"count: --count 3 in every shard", both(func(m map[string]any, k int) {
			setting(m, "count", 3)
		}), 1, "holds 1 results, want 3 (--count)"},
		{"runs: --runs 4 in every shard", both(func(m map[string]any, k int) {
			setting(m, "runs", 4)
		}), 1, "run 5: want 1 to 4 (--runs)"},
		{"runs: --runs 6 in every shard", both(func(m map[string]any, k int) {
			setting(m, "runs", 6)
		}), 1, "the output of its run 6 at base is missing"},
		{"duplicate entry: compared", first(func(m map[string]any) {
			m["compared"] = append(m["compared"].([]any), benchA)
		}), 1, `compared: not sorted`},
		{"duplicate entry: a recorded benchmark", first(func(m map[string]any) {
			r := m["recorded"].([]any)
			m["recorded"] = append([]any{r[0]}, r...)
		}), 1, "recorded 5 benchmarks, not the 4"},
		{"duplicate entry: a run's output", first(func(m map[string]any) {
			spans := m["bench"].(map[string]any)["base"].([]any)
			m["bench"].(map[string]any)["base"] = append(spans, spans[0])
		}), 1, `"example.com/m BenchmarkA"'s run 1 is there twice`},
		{"duplicate entry: allocations", first(func(m map[string]any) {
			m["allocations"] = append(m["allocations"].([]any), m["allocations"].([]any)[0])
		}), 1, "not sorted"},
		{"missing entry: a recorded benchmark", first(func(m map[string]any) {
			m["recorded"] = without(m["recorded"], isKey("example.com/m/sub BenchmarkD"))
		}), 1, "recorded 3 benchmarks, not the 4"},
		{"missing entry: a benchmark of the list, in every shard", both(func(m map[string]any, k int) {
			m["benchmarks"] = without(m["benchmarks"], isKey("example.com/m/sub BenchmarkD"))
		}), 1, "recorded 4 benchmarks, not the 4 its list of 7 deals it (first difference: \"example.com/m/sub BenchmarkD\" against"},
		{"missing entry: a run's output", first(func(m map[string]any) {
			spans := m["bench"].(map[string]any)["base"].([]any)
			m["bench"].(map[string]any)["base"] = spans[1:]
		}), 1, "the output of its run 1 at base is missing"},
		{"missing entry: a new benchmark's side", both(func(m map[string]any, k int) {
			if k == 2 {
				m["at"].(map[string]any)["head"] = without(m["at"].(map[string]any)["head"], isKey("example.com/m/sub BenchmarkNew"))
			}
		}), 2, `"example.com/m/sub BenchmarkNew": at neither revision`},
		{"a run's output is another benchmark's", first(func(m map[string]any) {
			spans := m["bench"].(map[string]any)["base"].([]any)
			spans[0].(map[string]any)["benchmark"], spans[1].(map[string]any)["benchmark"] = spans[1].(map[string]any)["benchmark"], spans[0].(map[string]any)["benchmark"]
		}), 1, `a result of "BenchmarkA-2" in the output of "example.com/m BenchmarkB/size=2"`},
		{"a benchmark made gone at head in every field of shard.json", first(func(m map[string]any) {
			m["compared"] = without(m["compared"], isKey(benchA))
			m["allocations"] = without(m["allocations"], isKey(benchA))
			m["at"].(map[string]any)["head"] = without(m["at"].(map[string]any)["head"], isKey(benchA))
			m["bench"].(map[string]any)["head"] = without(m["bench"].(map[string]any)["head"], isKey(benchA))
		}), 1, "head/bench.txt: bytes 0-125 of 2575 belong to no run"},
		{"a name with ../", both(func(m map[string]any, k int) {
			bad := "example.com/m/../../../../outside BenchmarkA"
			for _, f := range []string{"benchmarks", "recorded", "compared"} {
				for i, v := range m[f].([]any) {
					if v == benchA {
						m[f].([]any)[i] = bad
					}
				}
			}
		}), 1, `its package has an element "..": not a name`},
		{"a name with NUL", both(func(m map[string]any, k int) {
			list := m["benchmarks"].([]any)
			list[len(list)-1] = "example.com/m/sub BenchmarkZ\x00"
		}), 1, `is not in a package path or a benchmark name`},
		{"settings: --alpha in one shard", first(func(m map[string]any) {
			setting(m, "judge", []any{map[string]any{"flag": "alpha", "value": "0.5"}})
		}), 1, "differ in their flags and packages"},
		{"settings: --alpha in every shard", both(func(m map[string]any, k int) {
			setting(m, "judge", []any{map[string]any{"flag": "alpha", "value": "x"}})
		}), 1, `settings: judge: alpha "x"`},
		{"settings: a flag that is not the judgement's", both(func(m map[string]any, k int) {
			setting(m, "judge", []any{map[string]any{"flag": "out", "value": "/"}})
		}), 1, `judge: "out" is not a setting of the judgement`},
		{"settings: runs 10^9", both(func(m map[string]any, k int) {
			setting(m, "runs", 1_000_000_000)
		}), 1, "runs 1000000000, count 1: at most 1000 and 1000"},
		{"settings: a package that is a flag", both(func(m map[string]any, k int) {
			setting(m, "packages", []any{"-toolexec=x"})
		}), 1, `package pattern "-toolexec=x" starts with '-'`},
		{"settings: none", first(func(m map[string]any) {
			delete(m, "settings")
		}), 1, "no settings"},
		{"a shard of the old schema", first(func(m map[string]any) {
			m["schema"] = "hotbudget.shard/v1"
		}), 1, "record the shards again with this hotbudget"},
		{"a profile removed", func(dirs []string) {
			if err := os.Remove(filepath.Join(dirs[0], "head", "example.com", "m", "BenchmarkA.3.pb.gz")); err != nil {
				t.Fatal(err)
			}
		}, 1, "example.com/m BenchmarkA's run 3 at head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := fresh(t)
			tc.edit(dirs)
			out, stderr, code := mergeOut(t, dirs...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q\n%s%s", code, tc.want, stderr, out)
			}
			if tc.shard > 0 && !strings.Contains(stderr, dirs[tc.shard-1]) {
				t.Errorf("the error does not name shard %d's directory %s:\n%s", tc.shard, dirs[tc.shard-1], stderr)
			}
		})
	}
}

// The counted instructions' shards (--instructions): ops edited, or a
// benchmark's counts removed, are refused; unedited, the set fails.
func TestMergeTamperedCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unedited", nil, ""},
		{"ops = 1", func(m map[string]any) {
			m["instructions"].([]any)[0].(map[string]any)["ops"] = 1
		}, "shard.json says 1 ops"},
		{"ops = 10^9", func(m map[string]any) {
			m["instructions"].([]any)[0].(map[string]any)["ops"] = 1_000_000_000
		}, "shard.json says 1000000000 ops"},
		{"a benchmark's counts removed", func(m map[string]any) {
			m["instructions"] = m["instructions"].([]any)[1:]
		}, `"example.com/m BenchmarkA": its counted instructions are missing`},
		{"timed runs listed besides", func(m map[string]any) {
			m["compared"] = []any{benchA}
		}, "not what record --instructions writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs, _, _ := countedShards(t, t.TempDir())
			want := exitUsage
			if tc.edit == nil {
				want = exitFail
			} else {
				editShard(t, dirs[0], tc.edit)
			}
			_, stderr, code := mergeOut(t, dirs...)
			if code != want || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d and %q\n%s", code, want, tc.want, stderr)
			}
		})
	}
}

// A counted difference holds negative counts where the two processes'
// runtimes differed: merge reads them (TestRecordShardsInstructions' real
// shards have them), within the loaders' bounds.
func TestMergeCountsProfiles(t *testing.T) {
	dirs, _, _ := countedShards(t, t.TempDir())
	path := countsProfile(filepath.Join(dirs[0], "base"), "example.com/m", "BenchmarkA")
	if err := writeProfile(path, countsDiff(100, map[string]int64{"example.com/m.work": 100_000, "runtime.mallocgc": -15})); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := mergeOut(t, dirs...); code != exitFail {
		t.Errorf("a negative count: exit %d, want 1 (BenchmarkB regressed)\n%s", code, stderr)
	}
	t.Setenv("HOTBUDGET_MAX_BYTES", "0") // no limit
	if _, stderr, code := mergeOut(t, dirs...); code != exitFail {
		t.Errorf("HOTBUDGET_MAX_BYTES=0: exit %d, want 1\n%s", code, stderr)
	}
	t.Setenv("HOTBUDGET_MAX_BYTES", "4MiB")
	gzipFile(t, path, 64<<20, bytes.Repeat([]byte("\x32\x01a"), 1<<18))
	if _, stderr, code := mergeOut(t, dirs...); code != exitUsage || !strings.Contains(stderr, "more than 4 MiB") || !strings.Contains(stderr, path) {
		t.Errorf("a gzip bomb: exit %d, want 2 naming the file and the limit\n%s", code, stderr)
	}
	gzipFile(t, path, 64<<20, bytes.Repeat([]byte("a"), 1<<20))
	if _, stderr, code := mergeOut(t, dirs...); code != exitUsage || !strings.Contains(stderr, "not a pprof profile") {
		t.Errorf("a gzip bomb of text: exit %d, want 2\n%s", code, stderr)
	}
}

// gzipFile writes n bytes made by fill, gzipped, to path.
func gzipFile(t *testing.T, path string, n int, chunk []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	for written := 0; written < n; written += len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A shard's profile that is a gzip bomb is refused through the loaders'
// bounds: text is refused from its first bytes (main at 1afcfb3 parsed a
// 1.5 GB one whole with pprof's parser: 3.1 GB, then "bufio.Scanner: token
// too long"), and a protobuf of tiny strings past HOTBUDGET_MAX_BYTES as
// soon as it passes it.
func TestMergeGzipBomb(t *testing.T) {
	rec := fakeRecord(t, 2)
	args := []string{"--runs", "2", "main", "HEAD", "./..."}
	for _, tc := range []struct {
		name, maxBytes string
		chunk          []byte
		want           string
		alloc          uint64 // most bytes merge may allocate
	}{
		{"text", "", bytes.Repeat([]byte("a"), 1<<20), "not a pprof profile", 16 << 20},
		{"protobuf strings", "4MiB", bytes.Repeat([]byte("\x32\x01a"), 1<<18), "input too large", 32 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.maxBytes != "" {
				t.Setenv("HOTBUDGET_MAX_BYTES", tc.maxBytes)
			}
			dirs := rec.writeShards(t, t.TempDir(), 2, args)
			path := filepath.Join(dirs[0], "base", "example.com", "m", "BenchmarkA.1.pb.gz")
			gzipFile(t, path, 64<<20, tc.chunk)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, stderr, code := mergeOut(t, dirs...)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, path) {
				t.Errorf("exit %d, want 2, %q and the file\n%s", code, tc.want, stderr)
			}
			if alloc > tc.alloc {
				t.Errorf("merge allocated %d MiB refusing a 64 MiB bomb, want at most %d MiB", alloc>>20, tc.alloc>>20)
			}
			t.Logf("%s: %d MiB allocated: %s", tc.name, alloc>>20, stderr)
		})
	}
}

// merge refuses more directories than a record has shards, and --shard
// a number of shards past the limit, before anything is allocated by it.
func TestShardLimits(t *testing.T) {
	var s ShardSpec
	if err := s.Set("1/100000000"); err == nil || !strings.Contains(err.Error(), "N <= 1000") {
		t.Errorf("--shard 1/100000000: %v", err)
	}
	dirs := make([]string, 1001)
	for i := range dirs {
		dirs[i] = "x"
	}
	if _, stderr, code := mergeOut(t, dirs...); code != exitUsage || !strings.Contains(stderr, "at most 1000 shards") {
		t.Errorf("1001 directories: exit %d\n%s", code, stderr)
	}
}
