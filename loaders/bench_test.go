package loaders

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/synth"
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
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
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
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
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
	for b.Loop() {
		if _, err := ReadIndex(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
