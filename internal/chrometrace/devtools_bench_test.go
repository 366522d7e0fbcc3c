//go:build unix

package chrometrace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// The trace loading goal is set against DevTools' own engine: a real trace
// (testdata/corpus/chrome-trace/invalid-animation-events.json.gz, 24 MB,
// see testdata/corpus/SOURCES.md)
// replicated into one of about 190 MB, loaded side by side in one run by
// Parse and by @paulirish/trace_engine under Node as the Performance panel
// loads a file (devtools/load.mjs):
//
//	npm install --prefix /tmp/te @paulirish/trace_engine@0.0.65
//	TRACE_ENGINE=/tmp/te/node_modules/@paulirish/trace_engine \
//	  go test -run '^$' -bench LoadReplica -benchtime 3x -count 3 ./internal/chrometrace
//
// Without TRACE_ENGINE the devtools half installs the package into a
// temporary directory with npm (and skips when npm is missing). Both halves
// report cpu-ns/op (user plus system time) beside wall time, and their peak
// memory: MB-peak-heap (the Go heap in use above the heap before parsing,
// sampled every 5 ms) and MB-maxrss (the process's peak resident set) for
// Node, whose heap cannot be read from outside.

// replicas is how many copies of the real trace the replica holds.
const replicas = 8

var pidField = regexp.MustCompile(`"pid":(\d+)`)

// realTrace returns the events of the real trace, one raw JSON value each.
func realTrace(tb testing.TB) []json.RawMessage {
	tb.Helper()
	gz, err := os.ReadFile(filepath.Join(corpus, "chrome-trace", "invalid-animation-events.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	var events []json.RawMessage
	if err := json.NewDecoder(zr).Decode(&events); err != nil {
		tb.Fatal(err)
	}
	return events
}

// writeReplica writes a trace-event array of n copies of events, one event
// a line; copy k has every pid shifted by k*1,000,000 so that its
// processes, threads and profiles are new ones.
func writeReplica(w io.Writer, events []json.RawMessage, n int) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var size int64
	put := func(b []byte) { k, _ := bw.Write(b); size += int64(k) }
	put([]byte("[\n"))
	var buf []byte
	for k := 0; k < n; k++ {
		shift := int64(k) * 1_000_000
		for i, e := range events {
			buf = buf[:0]
			if k > 0 || i > 0 {
				buf = append(buf, ",\n"...)
			}
			if shift == 0 {
				buf = append(buf, e...)
			} else {
				last := 0
				for _, m := range pidField.FindAllSubmatchIndex(e, -1) {
					pid, _ := strconv.ParseInt(string(e[m[2]:m[3]]), 10, 64)
					buf = append(buf, e[last:m[2]]...)
					buf = strconv.AppendInt(buf, pid+shift, 10)
					last = m[3]
				}
				buf = append(buf, e[last:]...)
			}
			put(buf)
		}
	}
	put([]byte("\n]\n"))
	return size, bw.Flush()
}

// traceEngine returns the directory of @paulirish/trace_engine: $TRACE_ENGINE,
// else a fresh npm install into dir.
func traceEngine(b *testing.B, dir string) string {
	if d := os.Getenv("TRACE_ENGINE"); d != "" {
		return d
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		b.Skip("npm not found and TRACE_ENGINE not set: cannot run DevTools' engine")
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, "@paulirish/trace_engine@0.0.65")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("npm install @paulirish/trace_engine: %v\n%s", err, out)
	}
	return filepath.Join(dir, "node_modules", "@paulirish", "trace_engine")
}

// BenchmarkLoadReplica loads the ~190 MB replica of a real trace with
// Parse and with DevTools' engine.
func BenchmarkLoadReplica(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "replica.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	size, err := writeReplica(f, realTrace(b), replicas)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}

	b.Run("tool=hotbudget", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		stop := testutil.PeakHeap()
		start := testutil.CPUTime()
		var samples int64
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			p, err := Parse(f, pbuild.Options{Name: path})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			samples = 0
			for _, s := range p.Sample {
				samples += s.Value[0]
			}
		}
		cpu := testutil.CPUTime() - start
		peak := stop()
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(peak, "MB-peak-heap")
		b.ReportMetric(float64(size)/1e6, "MB-input")
		b.ReportMetric(float64(samples), "samples")
	})

	b.Run("tool=devtools", func(b *testing.B) {
		node, err := exec.LookPath("node")
		if err != nil {
			b.Skip("node not found")
		}
		engine := traceEngine(b, filepath.Join(dir, "npm"))
		script, err := filepath.Abs("devtools/load.mjs")
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		var cpu time.Duration
		var rss int64
		var got struct{ Samples, Threads, Events int }
		for b.Loop() {
			// The panel runs in a browser tab with a large heap; Node's
			// default limit would fail on this file.
			cmd := exec.Command(node, "--max-old-space-size=16384", script, engine, path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("node load.mjs: %v\n%s", err, stderr.Bytes())
			}
			if err := json.Unmarshal(out, &got); err != nil {
				b.Fatalf("node load.mjs printed %q: %v", out, err)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				rss = max(rss, ru.Maxrss*1024)
			}
		}
		if got.Samples == 0 || got.Threads < replicas {
			b.Fatalf("DevTools' engine found %d samples on %d threads: not a fair comparison", got.Samples, got.Threads)
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(rss)/1e6, "MB-maxrss")
		b.ReportMetric(float64(size)/1e6, "MB-input")
		b.ReportMetric(float64(got.Samples), "samples")
	})
}

// BenchmarkLoad2GBStream parses a trace of about 2 GB (85 copies of the
// real trace) generated on the fly through a pipe, so that it never exists
// as a file or in memory: no JavaScript tool can open it (V8's strings end
// at 512 MB). MB-peak-heap shows that memory stays bounded by what the
// profile holds, not by the input.
//
//	go test -run '^$' -bench Load2GBStream -benchtime 1x ./internal/chrometrace
func BenchmarkLoad2GBStream(b *testing.B) {
	events := realTrace(b)
	copies := int((2<<30)/(24<<20)) + 1
	b.ReportAllocs()
	var size int64
	stop := testutil.PeakHeap()
	for b.Loop() {
		pr, pw := io.Pipe()
		go func() {
			n, err := writeReplica(pw, events, copies)
			size = n
			pw.CloseWithError(err)
		}()
		p, err := Parse(pr, pbuild.Options{Name: "2GB stream"})
		if err != nil {
			b.Fatal(err)
		}
		pr.CloseWithError(errors.New("done"))
		if len(p.Sample) == 0 {
			b.Fatal("no samples")
		}
	}
	peak := stop()
	b.SetBytes(size)
	b.ReportMetric(float64(size)/1e6, "MB-input")
	b.ReportMetric(peak, "MB-peak-heap")
}
