package index_test

import (
	"bytes"
	"testing"

	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// BenchmarkReadChecked reads the speed goals' big profile (50,000
// functions, 200,000 stacks, 15.7 MB decompressed) through a Reader with
// a Meter and without an Index: what the loaders do with a pprof file
// before pprof's parser takes it (read it whole, the framing checked and
// the memory budget charged), to set against the loaders'
// BenchmarkReadPprof and BenchmarkDecode.
func BenchmarkReadChecked(b *testing.B) {
	var buf bytes.Buffer
	if err := synth.Profile(synth.Big).WriteUncompressed(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	start := testutil.CPUTime()
	for b.Loop() {
		r := index.Reader{Limit: 1 << 30, Meter: membudget.ForLimit(1 << 30)}
		if _, _, err := r.Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	if used := testutil.CPUTime() - start; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}
