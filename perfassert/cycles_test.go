package perfassert

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/valgrind"
	"github.com/hotbudget/hotbudget/limits"
)

// cyclesWideEnv makes the records cyclesSum reads four times as wide: the
// memory-layout change TestCyclesSeeMemoryLayout plants (the child
// processes inherit it).
const cyclesWideEnv = "HOTBUDGET_TEST_CYCLES_WIDE"

// cyclesRecords is the records cyclesSum reads: 1<<13 of them, of
// cyclesStride words each (16 bytes, a key and a value), or of four times
// as many (64 bytes: a record that grew by six words the loop never reads).
// Both layouts are larger than a first-level cache and smaller than the
// last level of valgrind.CIGeometry.
var cyclesRecords = make([]int64, 8*(1<<13))

const cyclesStride = 2

// cyclesSum sums the key of every record, stride words apart: the same
// instructions whatever the stride, four times the cache lines when the
// records are four times as wide.
//
//go:noinline
func cyclesSum(recs []int64, stride, n int) int64 {
	var s int64
	for i := 0; i+stride <= len(recs) && i < n*stride; i += stride {
		s += recs[i]
	}
	return s
}

func cyclesWork() {
	stride := cyclesStride
	if os.Getenv(cyclesWideEnv) != "" {
		stride *= 4
	}
	exactSink = int(cyclesSum(cyclesRecords, stride, 1<<13))
}

// TestCyclesSeeMemoryLayout plants a memory-layout change, records four
// times as wide and the same instructions: a baseline of estimated cycles
// names cyclesSum regressed, as memory, while a baseline of instructions
// passes the same change; unchanged code passes both.
func TestCyclesSeeMemoryLayout(t *testing.T) {
	needValgrind(t)
	dir := t.TempDir()
	cpath, ipath := filepath.Join(dir, "layout.cycles.pb.gz"), filepath.Join(dir, "layout.instructions.pb.gz")
	// Captures first: a child runs the test again up to its capture.
	c := Capture(t, cyclesWork, Cycles())
	same := Capture(t, cyclesWork, Cycles())
	i := Capture(t, cyclesWork, Instructions())
	t.Setenv(ProcessesEnv, "2")
	t.Setenv(UpdateEnv, "1")
	rec := &namedRec{name: t.Name()}
	if c == nil || i == nil || !MatchBaseline(rec, cpath, c) || !MatchBaseline(rec, ipath, i) || len(rec.errs) > 0 {
		t.Fatalf("recording: %q", rec.errs)
	}
	os.Unsetenv(UpdateEnv)
	t.Setenv(cyclesWideEnv, "1")
	cw := Capture(t, cyclesWork, Cycles())
	iw := Capture(t, cyclesWork, Instructions())
	if same == nil || cw == nil || iw == nil {
		t.Fatal("no capture")
	}

	// One profile: cycles first, the instructions and the cache events
	// after, and the geometry in the record.
	var types []string
	for _, st := range cw.SampleType {
		types = append(types, st.Type)
	}
	if want := append([]string{"cycles"}, valgrind.CacheEvents...); !slices.Equal(types, want) {
		t.Errorf("sample types %q, want %q", types, want)
	}
	if r, _ := meta.Known(cw); r.Depends[cacheDepends] != cacheRecord(valgrind.CIGeometry) {
		t.Errorf("cache recorded %q, want %q", r.Depends[cacheDepends], cacheRecord(valgrind.CIGeometry))
	}
	name := exactPrefix + "cyclesSum"
	// The same instructions (to a few in a hundred thousand: where a
	// stack switch lands differs between processes), a fifth more cycles.
	if ci, wi := selfOf(c, name, 1), selfOf(cw, name, 1); ci == 0 || max(ci-wi, wi-ci) > ci/1000 {
		t.Errorf("cyclesSum's instructions: %d narrow, %d wide: want the same", ci, wi)
	}
	// Under the race detector every access also touches its shadow
	// memory, whose misses dilute the difference (+8.3% in CI).
	least := int64(10)
	if raceEnabled {
		least = 5
	}
	if cc, wc := selfOf(c, name, 0), selfOf(cw, name, 0); 100*wc < (100+least)*cc {
		t.Errorf("cyclesSum's cycles: %d narrow, %d wide: want %d%% more at least", cc, wc, least)
	}

	rec = &namedRec{name: t.Name()}
	if !MatchBaseline(rec, cpath, same) {
		t.Errorf("unchanged code failed its cycles baseline: %q", rec.errs)
	}
	rec = &namedRec{name: t.Name()}
	if !MatchBaseline(rec, ipath, iw) {
		t.Errorf("the wider records failed the instructions baseline, which cannot see them: %q", rec.errs)
	}
	rec = &namedRec{name: t.Name()}
	if MatchBaseline(rec, cpath, cw) {
		t.Fatalf("the wider records passed the cycles baseline: %q", rec.logs)
	}
	msg := strings.Join(rec.errs, "\n")
	if !strings.Contains(msg, "regressed "+name+": ") || strings.Count(msg, "regressed ") != 2 ||
		!strings.Contains(msg, "memory: the same instructions") || !strings.Contains(msg, "confirmed: "+name) {
		t.Errorf("want cyclesSum alone regressed, as memory, confirmed:\n%s", msg)
	}
	t.Logf("the planted change:\n%s", msg)

	// NoRegression judges two captures of cycles the same way.
	rec = &namedRec{name: t.Name()}
	if NoRegression(rec, same, cw) || !strings.Contains(strings.Join(rec.errs, "\n"), "regressed "+name+": ") {
		t.Errorf("NoRegression(same, wide) did not name cyclesSum: %q", rec.errs)
	}
	rec = &namedRec{name: t.Name()}
	if !NoRegression(rec, c, same) {
		t.Errorf("NoRegression of two unchanged captures of cycles failed: %q", rec.errs)
	}

	// go tool pprof reads each sample type of the one profile: cycles by
	// default, and instructions and every cache event by -sample_index,
	// each with cyclesSum's self count.
	pb := filepath.Join(dir, "wide.pb.gz")
	if err := WriteBaseline(pb, cw); err != nil {
		t.Fatal(err)
	}
	for i, index := range append([]string{""}, valgrind.CacheEvents...) {
		got := testutil.PprofTopIndex(t, pb, index)[name][0]
		want := selfOf(cw, name, i)
		// The loop reads: cycles, instructions, reads and first-level
		// read misses are never zero (the records fit the last level).
		if got != want || (want == 0 && slices.Contains([]string{"", "instructions", "dr", "d1mr"}, index)) {
			t.Errorf("go tool pprof -sample_index=%s: cyclesSum's self %d, want %d", index, got, want)
		}
	}

	// Limits: one vocabulary, limits.Check with the quantity; the
	// instruction limits bound a cycles capture's instructions.
	runs, _ := Iterations(c)
	narrow, wide := selfOf(c, name, 0)/runs, selfOf(cw, name, 0)/runs
	bound := limits.Limit{Quantity: limits.SelfCycles, Count: (narrow + wide) / 2}
	if r, err := limits.Check(c, name, bound, PerIteration()); err != nil || !r.Passed {
		t.Errorf("narrow records (%d cycles) under a bound of %d: %+v, %v", narrow, bound.Count, r, err)
	}
	if r, err := limits.Check(cw, name, bound, PerIteration()); err != nil || r.Passed || r.Value != wide {
		t.Errorf("wide records (%d cycles) under a bound of %d: %+v, %v", wide, bound.Count, r, err)
	}
	if !MaxSelfInstructions(t, cw, name, selfOf(cw, name, 1)/runs+1, PerIteration()) {
		t.Error("the instruction limit did not bound the cycles capture's instructions")
	}
	if _, err := limits.Check(i, name, bound, PerIteration()); err == nil || !strings.Contains(err.Error(), "perfassert.Cycles") {
		t.Errorf("a cycles limit on a capture of instructions: %v", err)
	}

	// A capture of instructions against a baseline of cycles, and the
	// other way round, are refused with the command that records it again.
	for _, tc := range []struct {
		path string
		p    *profile.Profile
		want string
	}{{cpath, iw, "holds estimated cycles"}, {ipath, cw, "holds counted instructions"}} {
		rec = &namedRec{name: t.Name()}
		if MatchBaseline(rec, tc.path, tc.p) {
			t.Errorf("%s: passed", tc.want)
		}
		if msg := strings.Join(rec.errs, "\n"); !strings.Contains(msg, tc.want) || !strings.Contains(msg, UpdateEnv+"=1 go test") {
			t.Errorf("refusal:\n%s", msg)
		}
	}
}

// TestCyclesOtherGeometry refuses a baseline of cycles estimated with
// other caches, with the command that records it again.
func TestCyclesOtherGeometry(t *testing.T) {
	mk := func(cache string) *profile.Profile {
		p := notCounted("capture")
		rec, _, _ := meta.Get(p)
		rec.Instrument = instrumentCallgrind + " valgrind-3.19.0"
		rec.Depends = map[string]string{"go": "go1.26.8", cacheDepends: cache}
		meta.Set(p, rec)
		return p
	}
	other := valgrind.CIGeometry
	other.LL.Size = 8 << 20
	path := filepath.Join(t.TempDir(), "other.cycles.pb.gz")
	// Under the race detector the capture's own Depends choose the path:
	// these hand-made ones name no -race, so both are written.
	for _, file := range []string{path, racePath(path)} {
		if err := WriteBaseline(file, mk(cacheRecord(other))); err != nil {
			t.Fatal(err)
		}
	}
	rec := &namedRec{name: t.Name()}
	if MatchBaseline(rec, path, mk(cacheRecord(valgrind.CIGeometry))) {
		t.Fatal("a baseline of other caches judged the capture")
	}
	msg := strings.Join(rec.errs, "\n")
	if !strings.Contains(msg, "counted another program: cache "+cacheRecord(valgrind.CIGeometry)+" here, "+cacheRecord(other)+" in the baseline") ||
		!strings.Contains(msg, UpdateEnv+"=1 go test") {
		t.Errorf("refusal:\n%s", msg)
	}
}

// selfOf is the self value at index i of the function called name in p.
func selfOf(p *profile.Profile, name string, i int) int64 {
	var v int64
	for _, s := range p.Sample {
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil &&
			s.Location[0].Line[0].Function.Name == name && i < len(s.Value) {
			v += s.Value[i]
		}
	}
	return v
}

// cyclesTenMS is a function of about 10ms natively: passes over 4 MiB of
// records and a loop of arithmetic.
func cyclesTenMS() {
	var s int64
	for range 8 {
		s += cyclesSum(cyclesBig, 8, 1<<16)
	}
	exactSink = int(s) + int(exactSpin(8_000_000))
}

var cyclesBig = make([]int64, 1<<19)

// captureCostEnv names the one instrument TestCapturesOfTenMS captures
// with when BenchmarkCaptureCost runs it in a child process.
const captureCostEnv = "HOTBUDGET_TEST_CAPTURE_COST"

// TestCapturesOfTenMS captures the ~10ms function BenchmarkCaptureCost
// measures, once with each instrument: the cache simulation changes what
// is counted, never what runs, so the function's own loops (cyclesSum and
// exactSpin) execute the instructions in a capture of cycles that they do
// in a capture of instructions, to a few in a hundred thousand (where a
// stack switch lands differs between processes; the whole process's count
// differed by 0.03% under the race detector). Run by BenchmarkCaptureCost,
// it captures only the instrument it is given.
func TestCapturesOfTenMS(t *testing.T) {
	needValgrind(t)
	if testing.Short() {
		t.Skip("captures a 10ms function under callgrind twice; skipped with -short")
	}
	cyclesTenMS() // its memory's first touch
	var got []int64
	for _, o := range []struct {
		name string
		opt  CaptureOption
	}{{"instructions", Instructions()}, {"cycles", Cycles()}} {
		if only := os.Getenv(captureCostEnv); only != "" && only != o.name {
			continue
		}
		p := Capture(t, cyclesTenMS, o.opt)
		if p == nil {
			t.Fatal("no capture")
		}
		var n int64
		for i, st := range p.SampleType {
			if st.Type == "instructions" {
				n = selfOf(p, exactPrefix+"cyclesSum", i) + selfOf(p, exactPrefix+"exactSpin", i)
			}
		}
		got = append(got, n)
	}
	if len(got) == 2 {
		t.Logf("cyclesSum's and exactSpin's instructions: %d in a capture of instructions, %d in one of cycles", got[0], got[1])
		if i, c := got[0], got[1]; i == 0 || max(i-c, c-i) > i/10000 {
			t.Errorf("cyclesSum's and exactSpin's instructions: %d in a capture of instructions, %d in one of cycles: want the same", i, c)
		}
	}
}

// BenchmarkCaptureCost measures what a capture of a ~10ms function costs
// with each instrument: an op is TestCapturesOfTenMS run in a child
// process (the test binary, which runs valgrind) capturing with the one
// instrument the sub-benchmark names; cpu-s/op is the CPU time of that
// child and its processes, which other work on the machine inflates far
// less than wall time. Compare the two with benchstat
// (docs/instructions.md, "Cost"):
//
//	go test ./perfassert -run '^$' -bench CaptureCost -benchtime 1x -count 6
func BenchmarkCaptureCost(b *testing.B) {
	if _, err := valgrindPath(); err != nil {
		b.Skip(err)
	}
	for _, name := range []string{"instructions", "cycles"} {
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCapturesOfTenMS$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), captureCostEnv+"="+name)
				start := testutil.ChildrenCPUTime()
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestCapturesOfTenMS") {
					b.Fatalf("the child capture: %v\n%s", err, out)
				}
				cpu += testutil.ChildrenCPUTime() - start
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
