package callgrind

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/valgrind"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// BenchmarkParse reads the real file with --dump-instr=yes and 13 events.
func BenchmarkParse(b *testing.B) {
	testutil.BenchParse(b, Parse, readGz(b, filepath.Join(dir, "c-instr.callgrind.gz")))
}

// BenchmarkParseGo reads the real file of a Go program.
func BenchmarkParseGo(b *testing.B) {
	testutil.BenchParse(b, Parse, readGz(b, filepath.Join(dir, "go.callgrind.gz")))
}

// BenchmarkParseGoTest reads the dump of a Go test binary's whole run
// (about 1 MB, --dump-instr=yes: the runtime's start, stack growth,
// goroutine switches), recorded under valgrind when it is installed, with
// Parse and with ParseByAddress (symbolised from the binary's DWARF, as
// record reads its dumps); peak-MB is the heap's peak above its start.
func BenchmarkParseGoTest(b *testing.B) {
	vg, err := valgrind.Find()
	if err != nil {
		b.Skipf("the dump is recorded under valgrind: %v", err)
	}
	dir := b.TempDir()
	bin := goTestBinary(b, dir)
	data := goDump(b, vg, bin, filepath.Join(dir, "work.callgrind"), true)
	sym := dumpSym(b, bin, data)
	b.Run("Parse", func(b *testing.B) {
		benchPeak(b, data, func() error {
			_, err := Parse(bytes.NewReader(data), pbuild.Options{})
			return err
		})
	})
	b.Run("ParseByAddress", func(b *testing.B) {
		benchPeak(b, data, func() error {
			_, err := ParseByAddress(bytes.NewReader(data), pbuild.Options{}, sym)
			return err
		})
	})
}

// benchPeak measures parse over data, with the heap's peak.
func benchPeak(b *testing.B, data []byte, parse func() error) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var peak float64
	for b.Loop() {
		stop := testutil.PeakHeap()
		err := parse()
		peak = max(peak, stop())
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(peak, "peak-MB")
}
