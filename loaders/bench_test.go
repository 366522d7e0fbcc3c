package loaders

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// BenchmarkReadPprof reads the speed goals' big profile (50,000 functions,
// 200,000 stacks, about 9 MB gzipped) through Read: detection, gunzip, the
// memory budget's walk of the protobuf and pprof's parser.
func BenchmarkReadPprof(b *testing.B) {
	var buf bytes.Buffer
	if err := synth.Profile(synth.Big).Write(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	start := testutil.CPUTime()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkReadFolded reads 200,000 folded stacks, gzipped, through Read:
// the Builder charges the budget for every location and sample.
func BenchmarkReadFolded(b *testing.B) {
	var sb strings.Builder
	for i := range 200_000 {
		sb.WriteString("main.main;pkg.f")
		sb.WriteString(strings.Repeat(";pkg.g", i%16))
		sb.WriteString(";leaf")
		sb.WriteString(string(rune('a' + i%26)))
		sb.WriteString(" 3\n")
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(sb.String()))
	zw.Close()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	start := testutil.CPUTime()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkReadIndex reads the same profile through ReadIndex: detection,
// gunzip, the decoder's checks and budget, and the Index built straight
// from the bytes, without pprof's parser; set it against ReadPprof.
func BenchmarkReadIndex(b *testing.B) {
	var buf bytes.Buffer
	if err := synth.Profile(synth.Big).Write(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := testutil.CPUTime()
	for b.Loop() {
		if _, err := ReadIndex(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// reportCPU reports cpu-ns/op, the user and system time of all threads
// since start per op, which a machine busy with other work inflates less
// than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	if used := testutil.CPUTime() - start; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}
