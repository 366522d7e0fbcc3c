package loaders

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
)

const corpus = "../testdata/corpus/"

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Format
	}{
		{"cpuprofile nodes first", `{"nodes":[{"id":1}],"startTime":0}`, FormatCPUProfile},
		{"cpuprofile startTime first", `{"startTime":0,"endTime":1,"nodes":[]}`, FormatCPUProfile},
		{"legacy cpuprofile", `{"head":{"functionName":"(root)"},"timestamps":[]}`, FormatCPUProfile},
		{"cpuprofile with BOM and space", "\xef\xbb\xbf \n{\"samples\":[1],\"nodes\":[]}", FormatCPUProfile},
		{"trace array", `[{"ph":"X"}]`, FormatChromeTrace},
		{"trace object", `{"traceEvents":[]}`, FormatChromeTrace},
		{"trace object, metadata first", `{"metadata":{"a":[1,{"b":2}]},"traceEvents":[]}`, FormatChromeTrace},
		{"hermes samples after traceEvents", `{"samples":[],"stackFrames":{},"traceEvents":[]}`, FormatChromeTrace},
		{"speedscope", `{"$schema":"https://www.speedscope.app/file-format-schema.json"}`, FormatSpeedscope},
		{"speedscope without schema", `{"shared":{"frames":[]},"profiles":[]}`, FormatSpeedscope},
		{"folded", "main;a;b 12\nmain;c 3\n", FormatFolded},
		{"folded with comment", "# from perf\nmain;a 1\n", FormatFolded},
		{"go trace", "go 1.26 trace\x00\x00\x00rest", FormatGoTrace},
		{"protobuf is pprof", "\x0a\x12\x0a\x07samples", FormatPprof},
		{"legacy goroutine profile", "goroutine profile: total 3\n2 @ 0x1 0x2\n", FormatPprof},
		{"legacy heap profile", "heap profile: 1: 2 [3: 4] @ heap/1048576\n", FormatPprof},
		{"legacy contention profile", "--- contention:\ncycles/second=1\n", FormatPprof},
		{"legacy binary CPU profile", "\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x10\x27\x00\x00\x00\x00\x00\x00", FormatPprof},
		{"text that is not folded", "hello world\n", FormatUnknown},
		{"binary that is no protobuf", "\x00\x01\x02garbage", FormatUnknown},
		{"protobuf key with a group wire type", "\x0a\x00\x0c", FormatUnknown},
		{"only whitespace", "  \n", FormatUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect([]byte(tc.in)); got != tc.want {
				t.Errorf("Detect(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestDetectCorpus checks detection on every real file, by content only.
func TestDetectCorpus(t *testing.T) {
	dirs := map[string]Format{
		"cpuprofile":   FormatCPUProfile,
		"chrome-trace": FormatChromeTrace,
		"trace-event":  FormatChromeTrace,
		"speedscope":   FormatSpeedscope,
		"pprof":        FormatPprof,
	}
	for dir, want := range dirs {
		ents, err := os.ReadDir(corpus + dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(corpus + dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
				if dir == "pprof" {
					continue // pprof files are gzipped protobuf; checked by loading
				}
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				head := make([]byte, peekSize)
				n, _ := zr.Read(head)
				b = head[:n]
			}
			if len(b) > peekSize {
				b = b[:peekSize]
			}
			if got := Detect(b); got != want {
				t.Errorf("%s/%s: Detect = %q, want %q", dir, e.Name(), got, want)
			}
		}
	}
}

func TestLoadPprofVariants(t *testing.T) {
	raw, err := os.ReadFile(corpus + "pprof/simple.prof")
	if err != nil {
		t.Fatal(err)
	}
	p1, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Decompressed protobuf and double gzip load to the same profile.
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	plain.ReadFrom(zr)
	p2, err := Read(bytes.NewReader(plain.Bytes()))
	if err != nil {
		t.Fatalf("uncompressed protobuf: %v", err)
	}
	p3, err := Read(bytes.NewReader(gz(t, raw)))
	if err != nil {
		t.Fatalf("gzip of gzip: %v", err)
	}
	if p1.String() != p2.String() || p1.String() != p3.String() {
		t.Error("the same profile read three ways differs")
	}
	if sourceFormat(p1) != FormatPprof || isExact(p1) || len(Warnings(p1)) != 0 {
		t.Errorf("pprof metadata: format %q exact %v warnings %v", sourceFormat(p1), isExact(p1), Warnings(p1))
	}
	// The legacy binary CPU format is read through pprof's parser too.
	if _, err := Load(corpus + "pprof/go.crc32.cpu"); err != nil {
		t.Errorf("legacy format: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	raw, err := os.ReadFile(corpus + "pprof/simple.prof")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"empty", nil, "bad.prof: empty file"},
		{"empty gzip", gz(t, nil), "bad.prof: empty file after gzip"},
		{"truncated gzip", raw[:len(raw)/2], "bad.prof: gzip: truncated input"},
		{"gzip header only", raw[:5], "bad.prof: gzip"},
		{"garbage", []byte("\x00\x01\x02garbage"), "bad.prof: starts with bytes 0x00 0x01 0x02 0x67 0x61 0x72 0x62 0x61: not a profile"},
		{"text", []byte("hello world\nsecond line"), `bad.prof: starts with "hello world": not a profile`},
		{"whitespace", []byte(" \n\t"), "bad.prof: only whitespace (3 bytes): not a profile"},
		{"gzipped whitespace", gz(t, []byte(" \n\t")), "bad.prof: only whitespace (3 bytes): not a profile"},
		{"protobuf, then no protobuf", append([]byte("\x0a\x02\x08\x01"), make([]byte, 100)...), "bad.prof: starts with bytes 0x0a 0x02 0x08 0x01 0x00 0x00 0x00 0x00: not a profile"},
		// Beyond what detection sees: a 70,000-byte string, then zeros.
		{"protobuf, then no protobuf after 64 KiB", slices.Concat([]byte{0x32, 0xf0, 0xa2, 0x04}, bytes.Repeat([]byte("a"), 70000), make([]byte, 100)),
			"bad.prof: pprof: not a pprof protobuf: at offset 70005: field number 0"},
		{"gzip nested five deep", gz(t, gz(t, gz(t, gz(t, gz(t, []byte("main 1\n")))))), "bad.prof: gzip nested more than 4 deep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.in), WithName("bad.prof"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := Load("does/not/exist.pb.gz"); err == nil || !strings.Contains(err.Error(), "does/not/exist.pb.gz") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzRead feeds arbitrary bytes through detection and every parser: no
// input may panic or hang. ReadIndex gives Read's error, or the Index of
// Read's profile (a pprof protobuf taking the decoder's fast path).
func FuzzRead(f *testing.F) {
	for _, name := range []string{
		"pprof/simple.prof", "pprof/sample.cpu", "cpuprofile/simple.cpuprofile",
		"cpuprofile/example.cpuprofile", "trace-event/simple.json", "speedscope/simple.speedscope.json",
	} {
		b, err := os.ReadFile(corpus + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(processesSeed(f))
	f.Add([]byte("main;a;b 3\n"))
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	// pprof's legacy text formats (the line checker's path).
	f.Add([]byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1 0x2\n"))
	f.Add([]byte("--- contention:\ncycles/second=1\n1 2 @ 0x1 0x2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Read(bytes.NewReader(b))
		if err == nil {
			if err := p.CheckValid(); err != nil {
				t.Fatalf("Read returned an invalid profile: %v", err)
			}
		}
		x, xerr := ReadIndex(bytes.NewReader(b))
		if fmt.Sprint(xerr) != fmt.Sprint(err) {
			t.Fatalf("ReadIndex: %v; Read: %v", xerr, err)
		}
		if err == nil {
			want, werr := analysis.NewIndex(p)
			if werr != nil || !reflect.DeepEqual(x, want) {
				t.Fatalf("ReadIndex's Index differs from NewIndex's of Read's profile (%v)", werr)
			}
			sameProcesses(t, p, x)
		}
	})
}

// sameProcesses holds the Index's split by process (analysis.Index.Processes)
// to the profile's (meta.SplitProcesses): the same error, or the same
// tables process by process.
func sameProcesses(t *testing.T, p *profile.Profile, x *analysis.Index) {
	t.Helper()
	xs, xerr := x.Processes()
	ps, perr := meta.SplitProcesses(p)
	if fmt.Sprint(xerr) != fmt.Sprint(perr) || len(xs) != len(ps) {
		t.Fatalf("Processes: %d, %v; SplitProcesses: %d, %v", len(xs), xerr, len(ps), perr)
	}
	for i := range ps {
		want, err := analysis.Functions(ps[i])
		got, gerr := xs[i].Table()
		if fmt.Sprint(err) != fmt.Sprint(gerr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("process %d: Processes' table differs from SplitProcesses' (%v, %v)", i+1, gerr, err)
		}
		// Each is one run, as each profile is.
		runs, rerr := xs[i].Runs()
		if want, werr := meta.Split(ps[i]); fmt.Sprint(rerr) != fmt.Sprint(werr) || len(runs) != len(want) {
			t.Fatalf("process %d: %d runs (%v), its profile %d (%v)", i+1, len(runs), rerr, len(want), werr)
		}
	}
}

// processesSeed is a baseline of two processes, as MatchBaseline records
// one: pprof/simple.prof captured twice, each a run.
func processesSeed(f *testing.F) []byte {
	b, err := os.ReadFile(corpus + "pprof/simple.prof")
	if err != nil {
		f.Fatal(err)
	}
	var ps []*profile.Profile
	for range 2 {
		p, err := profile.ParseData(b)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range p.Sample {
			s.Label = map[string][]string{meta.LabelRun: {"a"}}
		}
		meta.Set(p, meta.Record{WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "a", Work: 10, CPUNanos: 5}}})
		ps = append(ps, p)
	}
	m, err := meta.MergeProcesses(ps)
	if err != nil {
		f.Fatal(err)
	}
	var out bytes.Buffer
	if err := m.Write(&out); err != nil {
		f.Fatal(err)
	}
	return out.Bytes()
}

// A folded file whose first line, a deep stack of long names, is longer
// than the detection window is still folded stacks, gzipped or not; what
// fills the window with no line break but is not text stays unknown.
func TestDetectFoldedLongFirstLine(t *testing.T) {
	var deep strings.Builder
	for i := 0; deep.Len() < 3*peekSize; i++ {
		if i > 0 {
			deep.WriteByte(';')
		}
		deep.WriteString("example.com/app/internal/render.(*Renderer).frame" + strings.Repeat("x", i%50))
	}
	leaf := "example.com/app.leaf"
	in := deep.String() + ";" + leaf + " 7\nmain;other 3\n"
	dir := t.TempDir()
	for name, b := range map[string][]byte{"deep.folded": []byte(in), "deep.folded.gz": gz(t, []byte(in)), "comment.folded": []byte("# " + strings.Repeat("c", 2*peekSize) + "\n" + in)} {
		path := dir + "/" + name
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err := DetectFile(path); err != nil || f != FormatFolded {
			t.Errorf("%s: detected %q (%v), want folded", name, f, err)
		}
		p, err := Load(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var samples int64
		leafSamples := int64(0)
		for _, s := range p.Sample {
			samples += s.Value[0]
			if fn := s.Location[0].Line[0].Function.Name; fn == leaf {
				leafSamples += s.Value[0]
			}
		}
		if samples != 10 || leafSamples != 7 {
			t.Errorf("%s: %d samples, %d at %s; want 10 and 7", name, samples, leafSamples, leaf)
		}
	}
	for _, c := range []struct {
		name, in string
		folded   bool
	}{
		{"control bytes", strings.Repeat("ab\x01", peekSize), false},
		{"protobuf-like", "\x0a\x04" + strings.Repeat("\x08\x01\x10\x02", peekSize/4), false},
		{"short, no count", "main;a", false},
		{"less than the window, no count", strings.Repeat("a;", peekSize/2-1) + "b", false},
		// The count may lie beyond the window: the parser decides.
		{"the window, no count yet", strings.Repeat("a;", peekSize/2) + "b", true},
	} {
		if got := Detect([]byte(c.in)); (got == FormatFolded) != c.folded {
			t.Errorf("%s: Detect = %q, want folded %v", c.name, got, c.folded)
		}
	}
}

// A profile converted to folded stacks is read back, whatever its names
// hold (NUL made detection refuse it, a CR, line break or root '#'
// changed or dropped stacks), and converting that again changes nothing.
func TestFoldedRoundTrip(t *testing.T) {
	names := []string{"#main", "nul\x00byte", "cr\rlf\n", "bad\xff", "semi;colon", "leaf 12", "space "}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Period:     1e6,
	}
	var stack []*profile.Location
	for i, n := range names {
		fn := &profile.Function{ID: uint64(i + 1), Name: n}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		stack = append([]*profile.Location{loc}, stack...) // names[0] the root
		p.Sample = append(p.Sample, &profile.Sample{Location: slices.Clone(stack), Value: []int64{int64(i + 1), int64(i+1) * 1e6}})
	}
	var first bytes.Buffer
	if err := Write(&first, p, FormatFolded); err != nil {
		t.Fatal(err)
	}
	q, err := Read(bytes.NewReader(first.Bytes()), WithName("first.folded"))
	if err != nil {
		t.Fatalf("reading back %q: %v", first.String(), err)
	}
	if len(q.Sample) != len(names) {
		t.Errorf("read back %d stacks, want %d:\n%s", len(q.Sample), len(names), first.String())
	}
	for _, s := range q.Sample {
		if len(s.Location) != int(s.Value[0]) {
			t.Errorf("a stack of %d frames has %d samples, want as many as frames:\n%s", len(s.Location), s.Value[0], first.String())
		}
	}
	var second bytes.Buffer
	if err := Write(&second, q, FormatFolded); err != nil {
		t.Fatal(err)
	}
	if second.String() != first.String() {
		t.Errorf("converting again:\n%q\nfirst:\n%q", second.String(), first.String())
	}
}
