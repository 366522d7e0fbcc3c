package shardset

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzCheck: any set of shards, as JSON, is checked without a panic, and
// a set Check accepts is shards 1..N, each recording its dealt part.
func FuzzCheck(f *testing.F) {
	for _, n := range []int{1, 2, 3} {
		b, err := json.Marshal(set(keys, n, 2))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 2, true, false)
	}
	f.Add([]byte(`[{"K":1,"N":100000000}]`), 1, false, false)
	f.Add([]byte(`[{"K":1,"N":1,"Benchmarks":["../x BenchmarkA"],"Recorded":["../x BenchmarkA"]}]`), 1, false, true)
	f.Fuzz(func(t *testing.T, data []byte, runs int, allocs, instructions bool) {
		var shards []*Shard
		if json.Unmarshal(data, &shards) != nil || slices.Contains(shards, nil) {
			return
		}
		if Check(shards, Want{Runs: runs, Allocations: allocs, Instructions: instructions}) != nil {
			return
		}
		for i, s := range shards {
			if s.K != i+1 || s.N != len(shards) || !slices.Equal(s.Recorded, part(s.Benchmarks, s.K, s.N)) {
				t.Fatalf("accepted shard %d of %d at %d, recording %q of %q", s.K, s.N, i, s.Recorded, s.Benchmarks)
			}
			for _, k := range s.Benchmarks {
				if CheckKey(k) != nil {
					t.Fatalf("accepted key %q", k)
				}
			}
		}
	})
}

// FuzzCheckBlock: any run's output is checked without a panic.
func FuzzCheckBlock(f *testing.F) {
	f.Add([]byte("goos: linux\npkg: example.com/m\nBenchmarkA-2 \t 1000\t 1000 ns/op\nPASS\n"), "example.com/m BenchmarkA", 1)
	f.Add([]byte("BenchmarkA 1 x ns/op\n"), "example.com/m BenchmarkA", 1)
	f.Fuzz(func(t *testing.T, b []byte, key string, count int) {
		_ = CheckBlock(b, key, count)
	})
}
