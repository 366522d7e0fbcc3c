package v8

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// genProfile writes a realistic modern .cpuprofile: nodes in a random tree
// (children lists and positionTicks, as Chrome writes them), samples mostly at
// a few hot leaves, timeDeltas around 1 ms with jitter and a few negative.
func genProfile(nodes, samples int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	parent := make([]int, nodes)
	children := make([][]int, nodes)
	for i := 1; i < nodes; i++ {
		// prefer recent nodes so the tree gets some depth (about 40 on
		// average, up to 80, like real call trees)
		p := i - 1 - r.IntN(min(i, 500))
		parent[i] = p
		children[p] = append(children[p], i)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"nodes":[`)
	for i := 0; i < nodes; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		name := "(root)"
		if i > 0 {
			name = "fn" + strconv.Itoa(i%3000)
		}
		fmt.Fprintf(&buf, `{"id":%d,"callFrame":{"functionName":%q,"scriptId":"%d","url":"file:///app/src/module%d.js","lineNumber":%d,"columnNumber":%d},"hitCount":%d`,
			i+1, name, i%50, i%50, i%700, i%40, r.IntN(5))
		if len(children[i]) > 0 {
			buf.WriteString(`,"children":[`)
			for k, c := range children[i] {
				if k > 0 {
					buf.WriteByte(',')
				}
				buf.WriteString(strconv.Itoa(c + 1))
			}
			buf.WriteByte(']')
		}
		if i%3 == 0 {
			buf.WriteString(`,"positionTicks":[{"line":10,"ticks":2},{"line":12,"ticks":1}]`)
		}
		buf.WriteByte('}')
	}
	buf.WriteString(`],"startTime":163140599286,"endTime":163150599286,"samples":[`)
	hot := []int{nodes - 1, nodes / 2, nodes / 3, 1}
	for i := 0; i < samples; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		id := r.IntN(nodes) + 1
		if r.IntN(2) == 0 {
			id = hot[r.IntN(len(hot))] + 1
		}
		buf.WriteString(strconv.Itoa(id))
	}
	buf.WriteString(`],"timeDeltas":[`)
	for i := 0; i < samples; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		d := 900 + r.IntN(400)
		if r.IntN(5000) == 0 {
			d = -d / 3
		}
		buf.WriteString(strconv.Itoa(d))
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// BenchmarkParse50MB parses a generated ~50 MB profile (20k nodes, 4.5M
// samples). Run: go test -run '^$' -bench Parse50MB -benchtime 3x ./internal/v8
func BenchmarkParse50MB(b *testing.B) {
	data := genProfile(20_000, 4_500_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	// Sample the heap while parsing to report its peak above what was
	// live before (the input buffer is part of that).
	stop := testutil.PeakHeap()
	b.ResetTimer()
	for range b.N {
		p, err := Parse(bytes.NewReader(data), pbuild.Options{Name: "CPU.20250510.134625.51430.0.001.cpuprofile"})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Sample) == 0 {
			b.Fatal("no samples")
		}
	}
	b.StopTimer()
	peak := stop()
	b.ReportMetric(float64(len(data))/1e6, "MB-input")
	b.ReportMetric(peak, "MB-peak-heap")
}
