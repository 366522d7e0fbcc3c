package chrometrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

const seedTrace = "../../testdata/chrome/seed001-chunks.json"

// TestSeedChunks works out seed 001's streamed example by hand. Sample
// times (µs) from startTime 1 and the deltas of four chunks:
// 1,101,201,301,301,351,401,451,501,551 for nodes 1,2,3,3,1,3,3,2,2,2.
// Each lasts until the next; the last lasts the average (550/9 µs).
func TestSeedChunks(t *testing.T) {
	p, err := parseFile(t, seedTrace, "")
	if err != nil {
		t.Fatal(err)
	}
	if pbuild.IsExact(p) {
		t.Fatal("samples view should be sampled")
	}
	got := selfTotal(p)
	want := map[string]st{
		"(root)":     {self: 150_000, total: 150_000, count: 2},
		"runMainESM": {self: 261_111, total: 461_111, count: 4},
		"main-work":  {self: 200_000, total: 200_000, count: 4},
	}
	for n, w := range want {
		if g := got[n]; g != w {
			t.Errorf("%s: got %+v, want %+v", n, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("functions %q", names(got))
	}
	if p.Period != 50_000 || p.DurationNanos != 611_111 {
		t.Errorf("period %d duration %d, want 50000 and 611111", p.Period, p.DurationNanos)
	}
	wantLabels := map[string][]string{"pid": {"1"}, "tid": {"1"}, "process": {"node"}, "thread": {"main"}, "profile": {"0x1"}}
	for _, s := range p.Sample {
		if fmt.Sprint(s.Label) != fmt.Sprint(wantLabels) {
			t.Fatalf("labels %v, want %v", s.Label, wantLabels)
		}
	}
	checkWarnings(t, p, nil)
}

// TestChunksEqualCPUProfile: a profile streamed as chunks gives exactly
// what the same data as a .cpuprofile gives through the V8 loader.
func TestChunksEqualCPUProfile(t *testing.T) {
	data, err := os.ReadFile("../../testdata/chrome/seed001-chunks.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	want, err := v8.Parse(bytes.NewReader(data), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseFile(t, seedTrace, pbuild.ViewSamples)
	if err != nil {
		t.Fatal(err)
	}
	sameProfile(t, got, want)

	// A bigger one with negative deltas, nodes spread over chunks (with
	// parent links, as Chrome writes them) and chunks before the Profile event.
	cpu, trace := genPair(2000, 50, 7)
	want, err = v8.Parse(bytes.NewReader(cpu), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = Parse(bytes.NewReader(trace), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameProfile(t, got, want)
}

// TestBatches: a profile too big for one v8.Build call is summed per node
// and built with v8.BuildPerNode, with the same result (the average
// interval is a whole µs here, so even the last sample agrees).
func TestBatches(t *testing.T) {
	cpu, trace := genPair(1001, 30, 7)
	want, err := v8.Parse(bytes.NewReader(cpu), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := batchMax
	batchMax = 64
	defer func() { batchMax = old }()
	got, err := Parse(bytes.NewReader(trace), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameProfile(t, got, want)
}

func sameProfile(t *testing.T, got, want *profile.Profile) {
	t.Helper()
	g, w := selfTotal(got), selfTotal(want)
	if len(g) != len(w) {
		t.Errorf("%d functions, want %d", len(g), len(w))
	}
	for n, wv := range w {
		if g[n] != wv {
			t.Errorf("%s: got %+v, want %+v", n, g[n], wv)
		}
	}
	if got.Period != want.Period || got.DurationNanos != want.DurationNanos {
		t.Errorf("period %d duration %d, want %d and %d", got.Period, got.DurationNanos, want.Period, want.DurationNanos)
	}
}

// genPair writes the same V8 profile as a .cpuprofile and as a trace of
// Profile/ProfileChunk events. Deltas are 100 µs except one negative; the
// last delta makes the average interval whole.
func genPair(samples, nodes, chunks int) (cpu, trace []byte) {
	var nb, sb, db strings.Builder
	for i := 1; i <= nodes; i++ {
		if i > 1 {
			nb.WriteByte(',')
		}
		name := fmt.Sprintf("f%d", i%17)
		if i == 1 {
			name = "(root)"
		}
		fmt.Fprintf(&nb, `{"id":%d,"callFrame":{"functionName":%q,"scriptId":"%d","url":"file:///m%d.js","lineNumber":%d,"columnNumber":3}`, i, name, i%5, i%5, i)
		if i > 1 {
			fmt.Fprintf(&nb, `,"parent":%d`, (i-2)/2+1)
		}
		nb.WriteByte('}')
	}
	ids := make([]int, samples)
	deltas := make([]int, samples)
	for i := range ids {
		ids[i] = (i*7919)%nodes + 1
		deltas[i] = 100
		if i == samples/2 {
			deltas[i] = -30
		}
		if i == samples/2+1 {
			deltas[i] = 230
		}
	}
	for i := range ids {
		if i > 0 {
			sb.WriteByte(',')
			db.WriteByte(',')
		}
		fmt.Fprint(&sb, ids[i])
		fmt.Fprint(&db, deltas[i])
	}
	cpu = []byte(fmt.Sprintf(`{"nodes":[%s],"startTime":1000,"endTime":999999999,"samples":[%s],"timeDeltas":[%s]}`, nb.String(), sb.String(), db.String()))

	var tb strings.Builder
	tb.WriteString(`{"metadata":{"source":"test"},"traceEvents":[`)
	per := (samples + chunks - 1) / chunks
	allNodes := strings.SplitAfter(nb.String(), "},")
	for c := 0; c < chunks; c++ {
		lo, hi := c*per, min((c+1)*per, samples)
		if c > 0 {
			tb.WriteString(",\n")
		}
		s, d := ints(ids[lo:hi]), ints(deltas[lo:hi])
		nodesPart := ""
		if c < 2 { // nodes split over the first two chunks
			half := len(allNodes) / 2
			part := allNodes[:half]
			if c == 1 {
				part = allNodes[half:]
			}
			nodesPart = `"nodes":[` + strings.TrimSuffix(strings.Join(part, ""), ",") + `],`
		}
		fmt.Fprintf(&tb, `{"args":{"data":{"cpuProfile":{%s"samples":[%s]},"lines":[%s],"timeDeltas":[%s]}},"cat":"disabled-by-default-v8.cpu_profiler","id":"0x2","name":"ProfileChunk","ph":"P","pid":7,"tid":99,"ts":%d}`,
			nodesPart, s, s, d, 5000+c)
		if c == 0 { // the head comes after the first chunk
			tb.WriteString(`,{"args":{"data":{"startTime":1000}},"id":"0x2","name":"Profile","ph":"P","pid":7,"tid":1,"ts":1000}`)
		}
	}
	tb.WriteString(`,{"name":"thread_name","ph":"M","pid":7,"tid":1,"args":{"name":"CrRendererMain"}}]}`)
	return cpu, []byte(tb.String())
}

func ints(v []int) string {
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}

// TestLabels: the sampled thread is the Profile event's tid, not the
// chunks'; names come from M events.
func TestLabels(t *testing.T) {
	_, trace := genPair(100, 10, 3)
	p, err := Parse(bytes.NewReader(trace), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if s.Label["tid"][0] != "1" || s.Label["thread"][0] != "CrRendererMain" || s.Label["pid"][0] != "7" || s.Label["profile"][0] != "0x2" {
			t.Fatalf("labels %v", s.Label)
		}
	}
	p, err = parseFile(t, filepath.Join(corpus, "trace-event", "multiprocess.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // function → pid/tid/process/thread
		"alpha": "0/0/p0/p0t0", "beta": "0/1/p0/p0t1", "gamma": "1/0/p1/p1t0", "delta": "1/1/p1/p1t1",
		"epsilon": "2/0//p2t0", "phi": "2/1//p2t1", "zeta": "3/0/p3/", "eta": "3/1/p3/",
	}
	lab := func(s *profile.Sample, k string) string {
		if v := s.Label[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	for _, s := range p.Sample {
		n := s.Location[0].Line[0].Function.Name
		got := lab(s, "pid") + "/" + lab(s, "tid") + "/" + lab(s, "process") + "/" + lab(s, "thread")
		if got != want[n] {
			t.Errorf("%s: labels %s, want %s", n, got, want[n])
		}
		if s.Value[1] != 1000 || s.Value[0] != 1 {
			t.Errorf("%s: values %v", n, s.Value)
		}
	}
}

// TestViews: samples by default when both exist; durations on request;
// fallback with a warning when the view asked for is empty.
func TestViews(t *testing.T) {
	p, err := parseFile(t, seedTrace, pbuild.ViewDurations)
	if err != nil {
		t.Fatal(err)
	}
	if !pbuild.IsExact(p) {
		t.Error("durations view should be exact")
	}
	if got := selfTotal(p)["RunTask"]; got.self != 600_000 || got.count != 1 {
		t.Errorf("RunTask %+v", got)
	}
	p, err = parseFile(t, filepath.Join(corpus, "trace-event", "simple.json"), pbuild.ViewSamples)
	if err != nil {
		t.Fatal(err)
	}
	if !pbuild.IsExact(p) {
		t.Error("no samples: should fall back to durations")
	}
	checkWarnings(t, p, []string{"no CPU samples: showing its 5 duration events instead"})
	p, err = parseFile(t, filepath.Join(corpus, "trace-event", "simple-with-samples.json"), pbuild.ViewDurations)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, p, []string{"no duration events"})
	if _, err := parseFile(t, seedTrace, "flames"); err == nil || !strings.Contains(err.Error(), `unknown view "flames"`) {
		t.Errorf("bad view: %v", err)
	}
}

// TestHermesSamples works out simple-with-samples.json by hand: top-level
// samples at 11552125241 + 0, 4440, 20770, 34096, 44701, 54710, 64710 µs
// on frames 1,1,2,4,1,5,5; each lasts until the next, the last the
// average 64710/6 = 10785 µs. Frame 4 (function3) has parent 3 (function2).
func TestHermesSamples(t *testing.T) {
	p, err := parseFile(t, filepath.Join(corpus, "trace-event", "simple-with-samples.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]st{}
	for n, v := range selfTotal(p) {
		got[strings.SplitN(n, "(", 2)[0]] = v
	}
	want := map[string]st{
		"[root]":         {self: 30_779_000, total: 75_495_000, count: 3}, // 4440+16330+10009
		"function1":      {self: 13_326_000, total: 13_326_000, count: 1},
		"function2":      {self: 0, total: 10_605_000, count: 0},
		"function3":      {self: 10_605_000, total: 10_605_000, count: 1},
		"[GC Young Gen]": {self: 20_785_000, total: 20_785_000, count: 2}, // 10000+10785
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %+v, want %+v", n, got[n], w)
		}
	}
	for _, s := range p.Sample {
		if s.Label["thread"][0] != "mqt_js" || s.Label["process"][0] != "hermes" || s.Label["tid"][0] != "7695" {
			t.Fatalf("labels %v", s.Label)
		}
	}
}

// TestSortByTime: samples far out of order (past the insertion sort's
// budget) are sorted stably too.
func TestSortByTime(t *testing.T) {
	var st store
	const n = 5000
	prev := int64(0)
	for i := 0; i < n; i++ {
		tm := int64((n - i) / 2) // backwards, in pairs of equal times
		if err := st.add(int64(i), tm-prev); err != nil {
			t.Fatal(err)
		}
		prev = tm
	}
	sortByTime(&st)
	for i := 1; i < n; i++ {
		if st.t(i) < st.t(i-1) || st.t(i) == st.t(i-1) && st.id(i) < st.id(i-1) {
			t.Fatalf("samples %d and %d out of order: (t %d, id %d), (t %d, id %d)", i-1, i, st.t(i-1), st.id(i-1), st.t(i), st.id(i))
		}
	}
}
