package index

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/synth"
)

var bigOnce struct {
	sync.Once
	p   *profile.Profile
	enc []byte
}

// big returns synth.Big as a profile and gzipped.
func big(b testing.TB) (*profile.Profile, []byte) {
	bigOnce.Do(func() {
		bigOnce.p = synth.Profile(synth.Big)
		var buf bytes.Buffer
		if err := bigOnce.p.Write(&buf); err != nil {
			panic(err)
		}
		bigOnce.enc = buf.Bytes()
	})
	return bigOnce.p, bigOnce.enc
}

// BenchmarkFromProfile indexes a parsed 50k-function profile.
func BenchmarkFromProfile(b *testing.B) {
	p, _ := big(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromProfile(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode indexes the same profile from its gzipped bytes.
func BenchmarkDecode(b *testing.B) {
	_, enc := big(b)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkParse is the reference: profile.ParseData of the same bytes.
func BenchmarkParse(b *testing.B) {
	_, enc := big(b)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := profile.ParseData(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSum computes self and total per function of the indexed profile.
func BenchmarkSum(b *testing.B) {
	p, _ := big(b)
	x, err := FromProfile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.Sum(Selection{}); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports cpu-ns/op, the user and system time of all threads
// since start per op, which a machine busy with other work inflates less
// than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	if used := cpuTime() - start; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}
