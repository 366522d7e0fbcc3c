package gate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/shardset"
)

// FuzzShardManifest: whatever shard.json holds, readShard and
// shardset.Check end with a shard or an error naming the file, without a
// panic; the seeds are real shard.json files of both instruments.
func FuzzShardManifest(f *testing.F) {
	dir := f.TempDir()
	timed := fakeRecord(f, 2).writeShards(f, filepath.Join(dir, "timed"), 2, []string{"--runs", "2", "main", "HEAD", "./..."})
	counted, _, _ := countedShards(f, filepath.Join(dir, "counted"))
	for _, d := range append(timed, counted...) {
		b, err := os.ReadFile(filepath.Join(d, shardManifest))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"of": 2`), []byte(`"of": 100000000`), 1))
		f.Add(bytes.Replace(b, []byte("example.com/m BenchmarkA"), []byte("example.com/m/../../x BenchmarkA"), -1))
	}
	target := filepath.Join(dir, "fuzz")
	if err := os.MkdirAll(target, 0o755); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(target, shardManifest)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := readShard(target, testSettings)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error does not name %s: %v", path, err)
			}
			return
		}
		if in.f.Shard < 1 || in.f.Shard > in.f.Of || in.f.Of > shardset.MaxShards {
			t.Fatalf("accepted shard %d of %d", in.f.Shard, in.f.Of)
		}
		o := in.cfg
		err = shardset.Check([]*shardset.Shard{in.set()}, shardset.Want{Runs: o.Runs, Allocations: !o.NoAllocs && !o.Instructions, Instructions: o.Instructions})
		if err == nil && in.f.Of != 1 {
			t.Fatalf("shard %d of %d alone accepted as a set", in.f.Shard, in.f.Of)
		}
	})
}

// FuzzMerge: merge's inputs of shard 1 (its shard.json and base/bench.txt)
// in a real set of two whose unedited merge fails (BenchmarkA regressed)
// end in exit 1 or 2, never a panic; accepted while shard 1 still lists
// BenchmarkA's profiles (compared), the set fails as the unedited one does.
func FuzzMerge(f *testing.F) {
	dirs := fakeRecord(f, 2).writeShards(f, f.TempDir(), 2, []string{"--runs", "2", "main", "HEAD", "./..."})
	manifest := filepath.Join(dirs[0], shardManifest)
	bench := filepath.Join(dirs[0], "base", "bench.txt")
	m, err := os.ReadFile(manifest)
	if err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(bench)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m, b)
	f.Add(m, b[1:])
	f.Add(bytes.Replace(m, []byte(`"run": 2`), []byte(`"run": 3`), 1), b)
	f.Add(m, bytes.Replace(b, []byte("BenchmarkA"), []byte("BenchmarkB"), 1))
	f.Fuzz(func(t *testing.T, m, b []byte) {
		if err := os.WriteFile(manifest, m, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bench, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := mergeOut(t, dirs...)
		if code != exitFail && code != exitUsage && code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		var sf shardFile
		if code != exitUsage && json.Unmarshal(m, &sf) == nil && slices.Contains(sf.Compared, benchA) && code != exitFail {
			t.Errorf("BenchmarkA's profiles merged, exit %d, want 1 as unedited\n%s", code, stderr)
		}
	})
}
