package perfassert

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/exactalloc"
)

// allocExtraEnv adds one 8-byte allocation without pointers to allocG an
// iteration (the child processes of a counted capture see it too).
const allocExtraEnv = "HOTBUDGET_TEST_ALLOC_EXTRA"

// allocNoFEnv removes allocF's tiny allocations: allocG's, which shared
// their 16-byte blocks, then open blocks of their own.
const allocNoFEnv = "HOTBUDGET_TEST_ALLOC_NOF"

var (
	allocSink8 *uint64
	allocSink4 *uint32
	allocSinkS string
	allocSinkP *[2]*int
)

// allocF makes 3 4-byte objects without pointers (the tiny allocator's).
//
//go:noinline
func allocF() {
	for i := range 3 {
		p := new(uint32)
		*p = uint32(i)
		allocSink4 = p
	}
}

// allocG makes 5 8-byte objects without pointers (6 with extra).
//
//go:noinline
func allocG(extra bool) {
	n := 5
	if extra {
		n++
	}
	for i := range n {
		p := new(uint64)
		*p = uint64(i)
		allocSink8 = p
	}
}

// allocH makes 2 buffers through strings.Builder, as allocK does: the
// standard library's code is shared, the allocations are each one's.
//
//go:noinline
func allocH() {
	for range 2 {
		var b strings.Builder
		b.Grow(24)
		b.WriteString("h")
		allocSinkS = b.String()
	}
}

//go:noinline
func allocK() {
	var b strings.Builder
	b.Grow(40)
	b.WriteString("k")
	allocSinkS = b.String()
}

// allocMk is inlined into allocWork: its 4 objects are its own.
func allocMk() {
	for range 4 {
		allocSinkP = new([2]*int)
	}
}

// allocWorkload is the captured function, as the environment sets it.
func allocWorkload() func() {
	extra, noF := os.Getenv(allocExtraEnv) != "", os.Getenv(allocNoFEnv) != ""
	return func() {
		if !noF {
			allocF()
		}
		allocG(extra)
		allocH()
		allocK()
		allocMk()
	}
}

// countedPer is the counted allocations per iteration of p's functions.
func countedPer(t *testing.T, rep *diff.AllocReport, head bool) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, row := range rep.Rows {
		c := row.Base.Self
		if head {
			c = row.Head.Self
		}
		m[strings.TrimPrefix(row.Name, exactPrefix)] = c.Objects
	}
	return m
}

// TestInstructionsAllocations: a counted capture counts every allocation,
// tiny ones one by one, charged to the function that made it through the
// standard library and inlining; MatchBaseline names the function given
// one more 8-byte object without pointers, alone; MaxAllocs limits the
// counts; removing one function's tiny objects judges nothing on the
// function whose objects shared their blocks.
func TestInstructionsAllocations(t *testing.T) {
	needValgrind(t)
	if raceEnabled {
		t.Skip("the race detector turns the tiny allocator off")
	}
	if !exactalloc.Validated(runtime.Version()) {
		t.Fatalf("%s: %v", runtime.Version(), exactalloc.ErrRelease)
	}
	path := filepath.Join(t.TempDir(), "allocs.pb.gz")
	p := Capture(t, allocWorkload(), Instructions())
	t.Setenv(allocExtraEnv, "1")
	more := Capture(t, allocWorkload(), Instructions())
	os.Unsetenv(allocExtraEnv)
	t.Setenv(allocNoFEnv, "1")
	noF := Capture(t, allocWorkload(), Instructions())
	os.Unsetenv(allocNoFEnv)
	if p == nil || more == nil || noF == nil {
		t.Fatal("no capture")
	}

	rep, ok, err := CheckAllocs(p, p)
	if err != nil || !ok {
		t.Fatalf("CheckAllocs: %v, %v", ok, err)
	}
	got := countedPer(t, rep, false)
	want := map[string]float64{"allocF": 3, "allocG": 5, "allocH": 2, "allocK": 1, "allocMk": 4}
	for fn, n := range want {
		if got[fn] != n {
			t.Errorf("%s: %v objects an iteration, want %v (all: %v)", fn, got[fn], n, got)
		}
	}
	for fn, n := range got {
		if _, ok := want[fn]; !ok && n != 0 && strings.HasPrefix(fn, "alloc") {
			t.Errorf("%s: %v objects an iteration, want none", fn, n)
		}
	}

	rec := &namedRec{name: t.Name()}
	if !MaxAllocs(rec, p, exactPrefix+"allocG", 5) || MaxAllocs(rec, more, exactPrefix+"allocG", 5) {
		t.Errorf("MaxAllocs(allocG, 5): %q", rec.errs)
	}
	rec = &namedRec{name: t.Name()}
	if MaxAllocBytes(rec, p, exactPrefix+"allocG", 1000) || !strings.Contains(strings.Join(rec.errs, ""), "not their bytes") {
		t.Errorf("MaxAllocBytes of counted allocations without bytes: %q", rec.errs)
	}

	t.Setenv(ProcessesEnv, "1")
	t.Setenv(UpdateEnv, "1")
	rec = &namedRec{name: t.Name()}
	if !MatchBaseline(rec, path, p) || len(rec.errs) > 0 {
		t.Fatalf("recording: %q", rec.errs)
	}
	os.Unsetenv(UpdateEnv)
	rec = &namedRec{name: t.Name()}
	if !MatchBaseline(rec, path, p) {
		t.Errorf("the baseline's own capture failed: %q", rec.errs)
	}
	rec = &namedRec{name: t.Name()}
	if MatchBaseline(rec, path, more) {
		t.Fatalf("one more 8-byte allocation passed: %q", rec.logs)
	}
	msg := strings.Join(rec.errs, "\n")
	_, allocs, _ := strings.Cut(msg, "allocations regressed")
	if !regexp.MustCompile(`regressed\s+`+regexp.QuoteMeta(exactPrefix)+`allocG: self 5 objects`).MatchString(allocs) || len(regexp.MustCompile(`(?m)^\s+regressed\s`).FindAllString(allocs, -1)) != 1 {
		t.Errorf("want allocG alone regressed (one object an iteration):\n%s", msg)
	}
	t.Logf("one more allocation:\n%s", msg)

	// Removing allocF's tiny objects: nothing else judged, counted or
	// from the memory profile of a timed capture.
	rec = &namedRec{name: t.Name()}
	if !NoRegression(rec, p, noF) {
		t.Errorf("counted: allocF's objects removed failed: %q", rec.errs)
	}
	t.Setenv(allocNoFEnv, "")
	tb := Capture(t, allocWorkload(), MaxDuration(200e6))
	t.Setenv(allocNoFEnv, "1")
	th := Capture(t, allocWorkload(), MaxDuration(200e6))
	trep, ok, err := CheckAllocs(tb, th)
	if err != nil || !ok {
		t.Fatalf("CheckAllocs of timed captures: %v, %v", ok, err)
	}
	if trep.Failed() {
		var b strings.Builder
		trep.Write(&b, "text")
		t.Errorf("timed: allocF's tiny objects removed judged another function:\n%s", b.String())
	}
}
