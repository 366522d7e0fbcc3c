package membudget_test

import (
	"bytes"
	"testing"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/synth"
)

// BenchmarkPprofWalker walks the speed goals' big profile (50,000
// functions, 200,000 stacks, 15.7 MB decompressed) with a Meter: the
// whole cost the memory budget adds to reading a pprof file, to set
// against the loaders' BenchmarkReadPprof and index's BenchmarkDecode.
func BenchmarkPprofWalker(b *testing.B) {
	var buf bytes.Buffer
	if err := synth.Profile(synth.Big).WriteUncompressed(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		w := membudget.NewPprofWalker(0, membudget.ForLimit(1<<30))
		for off := 0; off < len(data); off += 64 << 10 {
			if err := w.Feed(data[off:min(off+64<<10, len(data))]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
