package bench_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
)

// FuzzCompare: go test -bench output is untrusted input (a pull request's
// benchmarks print it). Whatever the two sides hold, Compare returns an
// error or a report that every writer writes, its JSON valid, and that
// fails exactly when a row regressed.
func FuzzCompare(f *testing.F) {
	for _, pair := range [][2]string{
		{"../testdata/cli/old.bench.txt", "../testdata/cli/new.bench.txt"},
		{"../testdata/benchpkg/base.txt", "../testdata/benchpkg/head.txt"},
	} {
		base, err := os.ReadFile(pair[0])
		if err != nil {
			f.Fatal(err)
		}
		head, err := os.ReadFile(pair[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(base, head)
	}
	f.Add([]byte("BenchmarkX 10 5 ns/op\n"), []byte("BenchmarkX 10 7 ns/op\nBenchmarkX 10 NaN ns/op\n"))
	f.Add([]byte("goos: linux\nBenchmarkX-2 1 1 B/op\n"), []byte("BenchmarkX-2 1 -1 B/op\nBenchmarkY 0 0 ns/op\n"))
	f.Add([]byte{}, []byte("BenchmarkX 1 1e308 ns/op 1e308 MB/s\n"))
	f.Fuzz(func(t *testing.T, base, head []byte) {
		if len(base)+len(head) > 1<<16 {
			return
		}
		r, err := bench.Compare(bytes.NewReader(base), bytes.NewReader(head))
		if err != nil {
			return
		}
		for _, name := range []string{"text", "markdown", "html"} {
			if err := r.Write(io.Discard, name); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		var js bytes.Buffer
		if err := r.Write(&js, "json"); err != nil {
			t.Fatalf("json: %v", err)
		}
		if !json.Valid(js.Bytes()) {
			t.Fatalf("invalid JSON:\n%s", js.Bytes())
		}
		if r.Failed() != (len(r.Regressions()) > 0) {
			t.Fatalf("Failed() = %v with %d regressions", r.Failed(), len(r.Regressions()))
		}
	})
}
