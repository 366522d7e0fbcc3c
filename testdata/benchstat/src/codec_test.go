// Package codec holds the real benchmarks whose `go test -bench` outputs are
// in testdata/benchstat: HOTBUDGET_BENCH_VARIANT=head makes Hash do twice
// the work (half the throughput) and Encode allocate one more buffer per
// operation. See ../README.md for how the outputs were made.
package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"
)

var head = os.Getenv("HOTBUDGET_BENCH_VARIANT") == "head"

var sink any

func BenchmarkHash(b *testing.B) {
	buf := bytes.Repeat([]byte("hotbudget"), 64<<10/9)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		s := sha256.Sum256(buf)
		if head {
			s = sha256.Sum256(append(s[:0:0], buf...)[:len(buf)])
		}
		sink = s[0]
	}
}

type record struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	r := record{Name: "hotbudget", Count: 42, Tags: []string{"a", "b", "c"}}
	for b.Loop() {
		out, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		if head {
			out = append([]byte(nil), out...)
		}
		sink = out
	}
}

func BenchmarkSort(b *testing.B) {
	b.ReportAllocs()
	xs := make([]int, 4096)
	for b.Loop() {
		for i := range xs {
			xs[i] = (i * 7919) % 4096
		}
		slices.Sort(xs)
	}
}

func BenchmarkItoa(b *testing.B) {
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = buf[:0]
		for i := range 256 {
			buf = strconv.AppendInt(buf, int64(i), 10)
		}
	}
	sink = buf
}
