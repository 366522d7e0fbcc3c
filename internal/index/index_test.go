package index

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/synth"
)

// diffIndex returns the first difference between a and b, or "". Empty and
// nil slices are equal.
func diffIndex(a, b *Index) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		fa, fb := va.Field(i), vb.Field(i)
		name := va.Type().Field(i).Name
		if (fa.Kind() == reflect.Slice || fa.Kind() == reflect.Map) && fa.Len() == 0 && fb.Len() == 0 {
			continue
		}
		if fa.Kind() == reflect.Slice {
			if fa.Len() != fb.Len() {
				return fmt.Sprintf("%s: len %d vs %d", name, fa.Len(), fb.Len())
			}
			for j := 0; j < fa.Len(); j++ {
				if !reflect.DeepEqual(fa.Index(j).Interface(), fb.Index(j).Interface()) {
					return fmt.Sprintf("%s[%d]: %v vs %v", name, j, fa.Index(j).Interface(), fb.Index(j).Interface())
				}
			}
			continue
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			return fmt.Sprintf("%s: %v vs %v", name, fa.Interface(), fb.Interface())
		}
	}
	return ""
}

// checkSame decodes data both ways and compares. want says whether
// profile.ParseData must accept it.
func checkSame(t *testing.T, name string, data []byte) {
	t.Helper()
	fast, ferr := Decode(data)
	ref, rerr := profile.ParseData(data)
	if ferr != nil {
		// Decode may refuse only what ParseData's protobuf path refuses
		// (legacy formats are for the loaders), and what the protobuf
		// encoding forbids though pprof's parser skips it: a field number
		// 0, a varint past 64 bits. The loaders take those for no
		// protobuf, so that detection stays strict.
		if strings.Contains(ferr.Error(), "not a pprof protobuf: at offset") &&
			(strings.HasSuffix(ferr.Error(), "field number 0") || strings.HasSuffix(ferr.Error(), "varint too long")) {
			return
		}
		raw := data
		if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return
			}
			if raw, err = io.ReadAll(zr); err != nil {
				return
			}
		}
		if p, err := profile.ParseUncompressed(raw); err == nil && p.CheckValid() == nil {
			t.Errorf("%s: Decode: %v, but profile.ParseUncompressed accepts it", name, ferr)
		}
		return
	}
	if rerr != nil {
		t.Fatalf("%s: Decode accepts what profile.ParseData refuses: %v", name, rerr)
	}
	want, err := FromProfile(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffIndex(fast, want); d != "" {
		t.Fatalf("%s: Decode differs from FromProfile(ParseData): %s", name, d)
	}
	// And the sums agree under a selection too.
	for _, sel := range []Selection{{}, {Focus: regexp.MustCompile(`a`)}, {Threads: []string{"worker-1"}}} {
		a, errA := fast.Sum(sel)
		b, errB := want.Sum(sel)
		if (errA == nil) != (errB == nil) || (errA == nil && !reflect.DeepEqual(a, b)) {
			t.Fatalf("%s: sums differ under %+v", name, sel)
		}
	}
}

func encode(t testing.TB, p *profile.Profile, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if gz {
		err = p.Write(&buf)
	} else {
		err = p.WriteUncompressed(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	for _, f := range files {
		if fi, err := os.Stat(f); filepath.Ext(f) == ".md" || err == nil && fi.IsDir() { // testdata/fuzz: the fuzz target's seeds
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, f, data)
		if _, err := Decode(data); err == nil {
			decoded++
		}
	}
	if decoded < 5 {
		t.Errorf("only %d corpus files decoded", decoded)
	}
	// The legacy binary profile is pprof's to read, not ours.
	data, _ := os.ReadFile("testdata/go.crc32.cpu")
	if _, err := Decode(data); err == nil {
		t.Error("Decode accepted a legacy binary profile")
	}
}

// edgeProfile has what the big synthetic ones lack: functions without
// names, locations without lines and without mappings, several sample
// types with a default, comments, numeric labels, and a repeated stack.
func edgeProfile() *profile.Profile {
	m := &profile.Mapping{ID: 1, File: "/usr/lib/libc.so.6"}
	m2 := &profile.Mapping{ID: 7}
	fns := []*profile.Function{
		{ID: 1, Name: "main.main", SystemName: "main.main", Filename: "/src/main.go", StartLine: 3},
		{ID: 2, Name: "", Filename: "/src/anon.go"},
		{ID: 5, Name: "main.helper", Filename: "/src/main.go"},
		{ID: 6, Name: "main.helper", Filename: "/src/other.go"},
		{ID: 9, Name: "(garbage collector)"},
	}
	locs := []*profile.Location{
		{ID: 1, Mapping: m, Line: []profile.Line{{Function: fns[0], Line: 10, Column: 2}}},
		{ID: 2, Mapping: m, Line: []profile.Line{{Function: fns[2], Line: 20}, {Function: fns[3], Line: 30}, {Function: fns[2], Line: 21}}},
		{ID: 3, Mapping: m},
		{ID: 4, Mapping: m2},
		{ID: 5},
		{ID: 6, Mapping: m, Line: []profile.Line{{Function: fns[1], Line: 4}}},
		{ID: 8, Line: []profile.Line{{Function: fns[4]}}},
	}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}, {Type: "wall", Unit: "microseconds"}},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            1000,
		DurationNanos:     5e9,
		Comments:          append(meta.AppendWarning(nil, "something was repaired"), "plain comment"),
		Mapping:           []*profile.Mapping{m, m2},
		Function:          fns,
		Location:          locs,
	}
	add := func(stack []int, labels map[string][]string, v ...int64) {
		s := &profile.Sample{Value: v, Label: labels}
		for _, i := range stack {
			s.Location = append(s.Location, locs[i])
		}
		p.Sample = append(p.Sample, s)
	}
	add([]int{1, 0}, nil, 1, 10, 7)
	add([]int{1, 1, 0}, map[string][]string{"thread": {"worker-1"}, "tid": {"11"}}, 2, 20, 8)
	add([]int{2, 0}, map[string][]string{"thread": {"worker-2", "alias"}}, 3, 30, 9)
	add([]int{3, 4, 5, 0}, nil, 4, 40, 10)
	add([]int{6}, nil, 5, 50, 11)
	add([]int{1, 0}, map[string][]string{"tid": {"11"}, "thread": {"worker-1"}}, 6, 60, 12)
	add(nil, nil, 7, 70, 13)
	p.Sample[3].NumLabel = map[string][]int64{"bytes": {4096}}
	p.Sample[3].NumUnit = map[string][]string{"bytes": {"bytes"}}
	return p
}

func TestDecodeMatchesFromProfile(t *testing.T) {
	cases := map[string]*profile.Profile{"edge": edgeProfile()}
	for i, s := range []synth.Spec{
		{Functions: 40, Stacks: 60, MinDepth: 1, MaxDepth: 6, Seed: 1},
		{Functions: 300, Stacks: 2000, MinDepth: 4, MaxDepth: 20, Seed: 2, Labels: true},
		{Functions: 5000, Stacks: 20000, MinDepth: 8, MaxDepth: 24, Seed: 3, Slower: 7},
	} {
		cases[fmt.Sprint("synth", i)] = synth.Profile(s)
	}
	// A profile built by the loaders' builder, with exact durations.
	b := pbuild.New(pbuild.Exact)
	f1 := b.Location(pbuild.Frame{Name: "render", File: "app.js", Line: 3, Column: 9})
	f2 := b.Location(pbuild.Frame{Name: "(idle)"})
	lab := pbuild.NewLabels(pbuild.LabelPID, "42", pbuild.LabelThread, "CrRendererMain")
	b.Add([]*profile.Location{f1}, 1, 500, lab)
	b.Add([]*profile.Location{f2}, 3, 900, lab)
	b.Warnf("dropped %d events", 3)
	p, err := b.Finish("chrome-trace", 0, 1400)
	if err != nil {
		t.Fatal(err)
	}
	cases["pbuild"] = p
	for name, p := range cases {
		checkSame(t, name+"/gzip", encode(t, p, true))
		checkSame(t, name+"/raw", encode(t, p, false))
	}
	// The index keeps what analysis needs.
	x, err := Decode(encode(t, cases["edge"], true))
	if err != nil {
		t.Fatal(err)
	}
	if x.NumSamples() != 7 || x.NumStacks() != 6 {
		t.Errorf("samples %d stacks %d, want 7 and 6 (one stack repeats)", x.NumSamples(), x.NumStacks())
	}
	var names []string
	for _, f := range x.Funcs {
		names = append(names, f.Name)
	}
	want := []string{"main.main", "main.helper", "main.helper", "[libc.so.6]", "<unknown>", "[libc.so.6]", "(garbage collector)"}
	if !slices.Equal(names, want) {
		t.Errorf("functions %q, want %q", names, want)
	}
	if x.Funcs[5].File != "/src/anon.go" {
		t.Errorf("a function without a name keeps its file: %+v", x.Funcs[5])
	}
	if got := x.Facts.Warnings; !slices.Equal(got, []string{"something was repaired"}) {
		t.Errorf("warnings %q", got)
	}
	if len(x.LabelSets) != 3 {
		t.Errorf("label sets %v, want the empty set and two more (label order within a key is kept, key order is not)", x.LabelSets)
	}
}

// Sums worked by hand on edgeProfile, under the default sample type
// (wall, microseconds).
func TestSumByHand(t *testing.T) {
	x, err := FromProfile(edgeProfile())
	if err != nil {
		t.Fatal(err)
	}
	s, err := x.Sum(Selection{})
	if err != nil {
		t.Fatal(err)
	}
	us := int64(1000)
	if s.Total != (7+8+9+10+11+12+13)*us || s.TotalSamples != 28 {
		t.Fatalf("total %d (%d samples)", s.Total, s.TotalSamples)
	}
	id := func(name, file string) int32 {
		for i, f := range x.Funcs {
			if f.Name == name && f.File == file {
				return int32(i)
			}
		}
		t.Fatalf("no function %s %s", name, file)
		return -1
	}
	main := id("main.main", "/src/main.go")
	helper := id("main.helper", "/src/main.go")
	other := id("main.helper", "/src/other.go")
	// main.main is on stacks 0,1,2,3,5; leaf of none.
	if s.Tot[main] != (7+8+9+10+12)*us || s.Self[main] != 0 {
		t.Errorf("main.main self %d total %d", s.Self[main], s.Tot[main])
	}
	// helper (main.go) is twice in location 2, which is twice in stack 1:
	// counted once per sample; leaf of samples 0, 1 and 5.
	if s.Tot[helper] != (7+8+12)*us || s.Self[helper] != (7+8+12)*us || s.TotN[helper] != 9 {
		t.Errorf("helper self %d total %d (%d samples)", s.Self[helper], s.Tot[helper], s.TotN[helper])
	}
	if s.Tot[other] != (7+8+12)*us || s.Self[other] != 0 || s.Line[other] != 30 {
		t.Errorf("helper (other.go) self %d total %d line %d", s.Self[other], s.Tot[other], s.Line[other])
	}
	// Threads: worker-1 by name and 11 by tid select samples 1 and 5.
	s, err = x.Sum(Selection{Threads: []string{"11"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != (8+12)*us {
		t.Errorf("tid 11: total %d", s.Total)
	}
	// Dropping synthetic leaves drops sample 4 from the total.
	s, err = x.Sum(Selection{Synthetic: func(n string) bool { return n == "(garbage collector)" }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != (7+8+9+10+12+13)*us {
		t.Errorf("drop synthetic: total %d", s.Total)
	}
	// Focus keeps the total, counts only samples through the focus.
	s, err = x.Sum(Selection{SampleType: "cpu", Focus: regexp.MustCompile(`^\[libc`)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 280 || s.Tot[main] != 70 || len(s.Order) != 4 {
		t.Errorf("focus libc: total %d, main %d, %d functions", s.Total, s.Tot[main], len(s.Order))
	}
	if _, err := x.Sum(Selection{SampleType: "alloc"}); err == nil {
		t.Error("unknown sample type: no error")
	}
}

// FuzzDecode holds Decode to profile.ParseData: what Decode accepts,
// ParseData accepts with the same index; what ParseData's protobuf path
// accepts, Decode accepts.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, edgeProfile(), false))
	f.Add(encode(f, synth.Profile(synth.Spec{Functions: 20, Stacks: 15, MinDepth: 1, MaxDepth: 5, Seed: 9, Labels: true}), false))
	f.Add(encode(f, synth.Profile(synth.Spec{Functions: 8, Stacks: 5, MinDepth: 1, MaxDepth: 3, Seed: 4}), true))
	for _, name := range []string{"sample.cpu", "simple.prof", "cppbench.cpu_no_samples_type"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0x32, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		checkSame(t, "input", data)
	})
}

// TestSplitFactsAsRead: the parts SplitRuns and SplitProcesses cut keep the
// record they were given rather than reading their comments again, and it
// is the record those comments hold, beside the parent's other facts.
func TestSplitFactsAsRead(t *testing.T) {
	p := edgeProfile()
	p.Comments = meta.MarkExact(meta.AppendWarning(nil, "kept"))
	var runs []meta.Run
	for i, s := range p.Sample {
		label := fmt.Sprint(i%3 + 1)
		s.Label = map[string][]string{meta.LabelRun: {label}}
		if i < 3 {
			runs = append(runs, meta.Run{Label: label, Work: float64(10 + i), CPUNanos: 7, Process: 1 + i%2})
		}
	}
	meta.Set(p, meta.Record{Name: "split", Build: "go1.26 linux/amd64", WorkUnit: meta.WorkIteration, SampledNanos: 3, UsedNanos: 4, Runs: runs})
	x, err := FromProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	byRun, err := x.SplitRuns()
	if err != nil {
		t.Fatal(err)
	}
	byProc, err := x.SplitProcesses()
	if err != nil {
		t.Fatal(err)
	}
	if len(byRun) != 3 || len(byProc) != 2 {
		t.Fatalf("%d runs, %d processes; want 3, 2", len(byRun), len(byProc))
	}
	for i, y := range append(byRun, byProc...) {
		if want := meta.Read(y.Comments); !reflect.DeepEqual(y.Facts, want) {
			t.Errorf("part %d: facts %+v, its comments read %+v", i, y.Facts, want)
		}
	}
}
