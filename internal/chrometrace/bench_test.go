package chrometrace

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// writeBigTrace writes a Chrome trace of about size bytes, as DevTools
// records it: two V8 profiles (main thread and a worker) streamed as
// ProfileChunk events of 100 to 300 samples, nodes (20,000, with parent
// links) arriving in the early chunks, lines in half the chunks, a few
// negative timeDeltas, and X events between chunks.
func writeBigTrace(w io.Writer, size int64) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	var n int64
	put := func(s string) { k, _ := bw.WriteString(s); n += int64(k) }
	put(`{"metadata":{"source":"DevTools","startTime":"2025-10-20T21:55:40.761Z"},"traceEvents":[` + "\n")
	put(`{"args":{"name":"CrRendererMain"},"cat":"__metadata","name":"thread_name","ph":"M","pid":7787,"tid":259,"ts":0},` + "\n")
	put(`{"args":{"name":"Renderer"},"cat":"__metadata","name":"process_name","ph":"M","pid":7787,"tid":0,"ts":0},` + "\n")
	for _, id := range []string{"0x1", "0x2"} {
		put(`{"args":{"data":{"startTime":336043688856}},"cat":"disabled-by-default-v8.cpu_profiler","id":"` + id + `","name":"Profile","ph":"P","pid":7787,"tid":259,"ts":336043688856,"tts":849},` + "\n")
	}
	const nodes = 20_000
	nextNode := [2]int{1, 1}
	ts := int64(336043688856)
	buf := make([]byte, 0, 1<<16)
	for chunk := 0; n < size; chunk++ {
		prof := chunk % 2
		buf = buf[:0]
		buf = append(buf, `{"args":{"data":{"cpuProfile":{`...)
		if nextNode[prof] <= nodes {
			buf = append(buf, `"nodes":[`...)
			for k := 0; k < 500 && nextNode[prof] <= nodes; k++ {
				id := nextNode[prof]
				nextNode[prof]++
				if k > 0 {
					buf = append(buf, ',')
				}
				name := "(root)"
				if id > 1 {
					name = "fn" + strconv.Itoa(id%3000)
				}
				buf = fmt.Appendf(buf, `{"callFrame":{"codeType":"JS","columnNumber":%d,"functionName":%q,"lineNumber":%d,"scriptId":%d,"url":"https://example.com/static/js/module%d.js"},"id":%d`,
					id%40, name, id%700, id%50, id%50, id)
				if id > 1 {
					buf = fmt.Appendf(buf, `,"parent":%d`, id-1-r.IntN(min(id-1, 300)))
				}
				buf = append(buf, '}')
			}
			buf = append(buf, "],"...)
		}
		k := 100 + r.IntN(200)
		known := min(nextNode[prof]-1, nodes)
		buf = append(buf, `"samples":[`...)
		for i := 0; i < k; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(1+r.IntN(known)), 10)
		}
		buf = append(buf, "]},"...)
		if chunk%2 == 0 {
			buf = append(buf, `"lines":[`...)
			for i := 0; i < k; i++ {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(r.IntN(900)), 10)
			}
			buf = append(buf, "],"...)
		}
		buf = append(buf, `"timeDeltas":[`...)
		for i := 0; i < k; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			d := int64(100 + r.IntN(60))
			if r.IntN(20000) == 0 {
				d = -d / 3
			}
			ts += d
			buf = strconv.AppendInt(buf, d, 10)
		}
		buf = fmt.Appendf(buf, `]}},"cat":"disabled-by-default-v8.cpu_profiler","id":"0x%d","name":"ProfileChunk","ph":"P","pid":7787,"tid":5143,"ts":%d,"tts":%d},`+"\n", prof+1, ts, ts/7)
		for x := 0; x < 3; x++ {
			buf = fmt.Appendf(buf, `{"args":{"data":{"frame":"F2145804653F1B7DEB75E1AA45F3EB51","url":"https://example.com/"}},"cat":"devtools.timeline","dur":%d,"name":"FunctionCall","ph":"X","pid":7787,"tdur":10,"tid":259,"ts":%d,"tts":46904},`+"\n", 50+x, ts+int64(x*60))
		}
		put(string(buf))
	}
	put(`{"args":{"data":{"endTime":` + strconv.FormatInt(ts, 10) + `}},"cat":"disabled-by-default-v8","name":"CpuProfiler::StopProfiling","ph":"I","pid":7787,"tid":259,"ts":` + strconv.FormatInt(ts, 10) + `}` + "\n]}\n")
	return n, bw.Flush()
}

// BenchmarkParse300MB parses a generated ~300 MB trace, streamed from a
// file under the temp dir (deleted afterwards), and reports MB/s, allocations
// and the peak heap in use above the heap before parsing.
// Run: go test -run '^$' -bench Parse300MB -benchtime 1x ./internal/chrometrace
func BenchmarkParse300MB(b *testing.B) {
	f, err := os.CreateTemp("", "chrometrace-bench-*.json")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := writeBigTrace(f, 300<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	stop := testutil.PeakHeap()
	b.ResetTimer()
	var samples int64
	for range b.N {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		p, err := Parse(f, pbuild.Options{})
		if err != nil {
			b.Fatal(err)
		}
		samples = 0
		for _, s := range p.Sample {
			samples += s.Value[0]
		}
	}
	b.StopTimer()
	peak := stop()
	b.ReportMetric(float64(size)/1e6, "MB-input")
	b.ReportMetric(float64(samples)/1e6, "Msamples")
	b.ReportMetric(peak, "MB-peak-heap")
}
