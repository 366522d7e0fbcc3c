package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

func TestShardSpec(t *testing.T) {
	for in, want := range map[string]ShardSpec{"1/1": {1, 1}, "1/4": {1, 4}, "4/4": {4, 4}, "12/40": {12, 40}} {
		var s ShardSpec
		if err := s.Set(in); err != nil || s != want || s.String() != in {
			t.Errorf("Set(%q): %v, %v (%q), want %v", in, err, s, s.String(), want)
		}
	}
	for _, in := range []string{"", "1", "0/4", "5/4", "1/0", "-1/4", "a/b", "1/4/2", "1 /4"} {
		var s ShardSpec
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) = %v, want an error", in, s)
		}
	}
}

// Every benchmark in exactly one shard, the shards' sizes within one of
// each other, and the assignment a function of the sorted list alone.
func TestShardPart(t *testing.T) {
	for total := range 42 {
		var all []string
		for i := range total {
			all = append(all, fmt.Sprintf("example.com/p%d BenchmarkX%02d", i%3, i))
		}
		slices.Sort(all)
		for n := 1; n <= 6; n++ {
			seen := map[string]int{}
			lo, hi := total, 0
			for k := 1; k <= n; k++ {
				part := shardPart(all, ShardSpec{k, n})
				if !slices.Equal(part, shardPart(slices.Clone(all), ShardSpec{k, n})) || !slices.IsSorted(part) {
					t.Fatalf("%d benchmarks, shard %d/%d: %v not sorted or not deterministic", total, k, n, part)
				}
				lo, hi = min(lo, len(part)), max(hi, len(part))
				for _, b := range part {
					seen[b]++
				}
			}
			if len(seen) != total || hi-lo > 1 {
				t.Errorf("%d benchmarks in %d shards: %d covered, sizes %d-%d", total, n, len(seen), lo, hi)
			}
			for b, c := range seen {
				if c != 1 {
					t.Errorf("%d benchmarks in %d shards: %s in %d shards", total, n, b, c)
				}
			}
		}
	}
	// Dealt, not cut in blocks: a package's benchmarks, neighbours in the
	// sorted list and often alike in cost, go to different shards.
	all := []string{"a B1", "a B2", "a B3", "a B4", "b B1", "b B2", "b B3", "b B4"}
	if got := shardPart(all, ShardSpec{2, 4}); !slices.Equal(got, []string{"a B2", "b B2"}) {
		t.Errorf("shard 2/4 of %v: %v", all, got)
	}
}

// shardModule is testutil.RecordModule with a benchmark per function besides
// Process's: four benchmarks to shard.
var shardModule = map[string]string{
	"go.mod": testutil.RecordModule["go.mod"],
	"rec.go": testutil.RecordModule["rec.go"],
	"rec_test.go": testutil.RecordModule["rec_test.go"] + `
func benchFunc(b *testing.B, f func([]byte) uint64) {
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f(data)
	}
}

func BenchmarkScan(b *testing.B)     { benchFunc(b, scan) }
func BenchmarkChecksum(b *testing.B) { benchFunc(b, checksum) }
func BenchmarkRender(b *testing.B)   { benchFunc(b, render) }
`,
}

// regressedRows are the functions of the module judged regressed in a
// record's JSON report, as "BENCHMARK FUNCTION", and its exit code.
func regressedRows(t *testing.T, out string) []string {
	t.Helper()
	var rep struct {
		Exit      int
		Functions []struct {
			Name      string
			Functions []struct{ Name, Verdict string }
		}
		Benchmarks json.RawMessage // record's: an object; --instructions: a list
	}
	var exact []struct {
		Benchmark string
		Report    struct {
			Rows []struct{ Name, Verdict string }
		}
	}
	err := json.Unmarshal([]byte(out), &rep)
	if err == nil && bytes.HasPrefix(rep.Benchmarks, []byte("[")) {
		err = json.Unmarshal(rep.Benchmarks, &exact)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := []string{fmt.Sprint("exit ", rep.Exit)}
	for _, f := range rep.Functions {
		for _, r := range f.Functions {
			if r.Verdict == "regressed" && strings.HasPrefix(r.Name, "example.com/rec.") {
				rows = append(rows, f.Name+" "+r.Name)
			}
		}
	}
	for _, b := range exact { // --instructions
		for _, r := range b.Report.Rows {
			if r.Verdict == "regressed" || r.Verdict == "new" {
				rows = append(rows, b.Benchmark+" "+r.Name)
			}
		}
	}
	slices.Sort(rows)
	return rows
}

// shardRepo is a repository of shardModule whose second commit makes
// checksum run 12 rounds instead of 8: 50% slower.
func shardRepo(t *testing.T) string {
	t.Helper()
	dir, gitIn, write := moduleRepo(t, shardModule, "git")
	write("rec.go", strings.Replace(testutil.RecordModule["rec.go"], "const checksumRounds = 8", "const checksumRounds = 12", 1))
	gitIn("commit", "-q", "-a", "-m", "slower checksum")
	return dir
}

// recordSharded records HEAD~1 HEAD of repo in n shards with args, checks
// what each says of the total benchmarks found, and merges them: merge's
// JSON report and exit code.
func recordSharded(t *testing.T, repo string, n, total int, args ...string) (string, int) {
	t.Helper()
	var dirs []string
	for k := 1; k <= n; k++ {
		out := filepath.Join(t.TempDir(), fmt.Sprint("shard-", k))
		shard := recordIn(t, repo, append(args, "--shard", fmt.Sprintf("%d/%d", k, n), "--out", out, "HEAD~1", "HEAD")...)
		if want := fmt.Sprintf("shard %d/%d recorded %d of %d benchmarks", k, n, len(shardPart(make([]string, total), ShardSpec{k, n})), total); shard.code != exitOK || !strings.Contains(shard.stdout, want) {
			t.Fatalf("shard %d/%d: exit %d, want 0 and %q\n%s\n%s", k, n, shard.code, want, shard.stdout, shard.stderr)
		}
		dirs = append(dirs, out)
	}
	merged, stderr, code := mergeOut(t, append([]string{"--format", "json"}, dirs...)...)
	t.Logf("hotbudget merge: exit %d\n%s", code, stderr)
	return merged, code
}

// TestRecordShards records a change that makes checksum 50% slower once
// whole and once in three shards (of 4 benchmarks: 2, 1 and 1) merged:
// both fail naming checksum in BenchmarkProcess (in BenchmarkChecksum it is
// the whole profile, whose share cannot move: the benchmark's time per op
// fails there). Both measure anew, so a statistical verdict on a function
// of small share may differ between them now and then (render in
// BenchmarkProcess was once judged regressed in the whole record at load
// 13): the rows are logged, and a pair that misses checksum is recorded
// once more before the test fails. Five shards of four benchmarks leave
// the fifth empty: it records nothing and says so.
func TestRecordShards(t *testing.T) {
	testutil.Slow(t, "builds and benchmarks two revisions of four benchmarks, whole and in three shards")
	repo := shardRepo(t)
	args := []string{"--time", "--runs", "5", "--benchtime", "300ms"}
	want := "example.com/rec BenchmarkProcess example.com/rec.checksum"
	for try := 1; try <= 2; try++ {
		whole := recordIn(t, repo, append(args, "--format", "json", "--out", filepath.Join(t.TempDir(), "whole"), "HEAD~1", "HEAD")...)
		merged, code := recordSharded(t, repo, 3, 4, args...)
		w, m := regressedRows(t, whole.stdout), regressedRows(t, merged)
		t.Logf("try %d: whole %q, merged %q", try, w, m)
		if whole.code == exitFail && code == exitFail && slices.Contains(w, want) && slices.Contains(m, want) {
			break
		}
		if try == 2 {
			t.Fatalf("whole: exit %d, %q; merged: exit %d, %q; want exit 1 and %q in both", whole.code, w, code, m, want)
		}
	}
	out := filepath.Join(t.TempDir(), "empty")
	empty := recordIn(t, repo, "--runs", "1", "--benchtime", "1x", "--no-allocs", "--shard", "5/5", "--out", out, "HEAD~1", "HEAD")
	if empty.code != exitOK || !strings.Contains(empty.stdout, "shard 5/5 recorded 0 of 4 benchmarks") {
		t.Errorf("shard 5/5 of 4 benchmarks: exit %d\n%s\n%s", empty.code, empty.stdout, empty.stderr)
	}
}

// TestRecordShardsInstructions: counted instructions are exact, so two
// shards merged name exactly what the whole record names (checksum in
// BenchmarkChecksum and BenchmarkProcess) and nothing else.
func TestRecordShardsInstructions(t *testing.T) {
	testutil.Slow(t, "builds two revisions three times and counts two benchmarks under valgrind twice")
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind is not installed")
	}
	repo := shardRepo(t)
	args := []string{"--instructions", "--bench", "^Benchmark(Process|Checksum)$"}
	whole := recordIn(t, repo, append(args, "--format", "json", "--out", filepath.Join(t.TempDir(), "whole"), "HEAD~1", "HEAD")...)
	merged, code := recordSharded(t, repo, 2, 2, args...)
	w, m := regressedRows(t, whole.stdout), regressedRows(t, merged)
	want := []string{"example.com/rec BenchmarkChecksum example.com/rec.checksum", "example.com/rec BenchmarkProcess example.com/rec.checksum", "exit 1"}
	if whole.code != exitFail || code != exitFail || !slices.Equal(w, want) || !slices.Equal(m, want) {
		t.Errorf("whole: exit %d, %q; merged: exit %d, %q; want exit 1 and %q in both\n%s", whole.code, w, code, m, want, merged)
	}
}
