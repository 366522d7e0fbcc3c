package exactalloc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// childEnv makes TestAllocChild, run by the tests under callgrind, run
// the workload.
const childEnv = "HOTBUDGET_EXACTALLOC_CHILD"

// The workload's allocations per round, known by hand.
const (
	kF   = 7  // F: 8-byte objects without pointers (the tiny allocator's)
	kG   = 5  // G: 24-byte buffers through strings.Builder
	kH   = 3  // H: the same through the same standard library code
	kMk  = 4  // mk, inlined into I: 16-byte objects with pointers
	kI   = 2  // I itself: 8-byte objects without pointers
	runs = 10 // rounds
)

var (
	sink8 *uint64
	sinkS string
	sinkP *[2]*int
)

//go:noinline
func workF() {
	for i := range kF {
		p := new(uint64)
		*p = uint64(i)
		sink8 = p
	}
}

//go:noinline
func workG() {
	for range kG {
		var b strings.Builder
		b.Grow(24)
		b.WriteString("g")
		sinkS = b.String()
	}
}

//go:noinline
func workH() {
	for range kH {
		var b strings.Builder
		b.Grow(24)
		b.WriteString("h")
		sinkS = b.String()
	}
}

// mk is inlined into workI.
func mk() *[2]*int { return new([2]*int) }

//go:noinline
func workI() {
	for range kMk {
		sinkP = mk()
	}
	for i := range kI {
		p := new(uint64)
		*p = uint64(i)
		sink8 = p
	}
}

// zeroSized allocates nothing: mallocgc returns zerobase.
//
//go:noinline
func zeroSized(n int) {
	s := make([]struct{}, n)
	sinkS = fmt.Sprint(len(s) > 100)[:0]
}

func workload() {
	workF()
	workG()
	workH()
	workI()
}

// TestAllocChild is the program the tests run under callgrind: the
// workload, runs rounds, with instrumentation on, then a dump.
func TestAllocChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the child process of TestCountsByHand, run only by it under valgrind")
	}
	workload() // what happens once
	valgrind.StartInstrumentation()
	valgrind.ZeroStats()
	for range runs {
		workload()
	}
	valgrind.StopInstrumentation()
	valgrind.DumpStatsAt("exactalloc test")
}

// testSym names addresses of this binary as perfassert's counted
// captures do: the compiled function, then the innermost inlined one.
func testSym(addr uint64) ([]callgrind.Frame, bool) {
	f := runtime.FuncForPC(uintptr(addr))
	if f == nil {
		return nil, false
	}
	outer := runtime.FuncForPC(f.Entry())
	frames := []callgrind.Frame{{Func: outer.Name()}}
	if f.Name() != outer.Name() {
		frames = append(frames, callgrind.Frame{Func: f.Name()})
	}
	return frames, true
}

// countChild runs TestAllocChild under callgrind with extra options and
// returns its dump's path.
func countChild(t *testing.T, extra ...string) string {
	t.Helper()
	vg, err := valgrind.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := valgrind.Run{Out: filepath.Join(dir, "callgrind.out"), Extra: extra}
	cmd := run.Command(ctx, vg, append(os.Environ(), childEnv+"=1"), exe, "-test.run=^TestAllocChild$", "-test.count=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("valgrind: %v\n%s", err, out)
	}
	return filepath.Join(dir, "callgrind.out.1")
}

const pkg = "github.com/hotbudget/hotbudget/internal/exactalloc."

// selfObjects is the allocations of p by leaf function.
func selfObjects(p *profile.Profile) map[string]int64 {
	m := map[string]int64{}
	for _, s := range p.Sample {
		m[s.Location[0].Line[0].Function.Name] += s.Value[0]
	}
	return m
}

// TestCountsByHand counts a workload whose allocations are known by hand:
// tiny objects one by one, allocations through a standard library helper
// two functions share, an inlined helper's apart from the function it is
// inlined into.
func TestCountsByHand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Supported(exe); errors.Is(err, ErrRelease) {
		t.Skipf("%v: the charging is %s's", err, ValidatedRelease)
	}
	malloc, err := MallocName(exe)
	if err != nil {
		t.Fatal(err)
	}
	dump := countChild(t, Arg(malloc))
	p, c, err := ReadFile(dump, malloc, testSym)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	got := selfObjects(p)
	want := map[string]int64{pkg + "workF": kF * runs, pkg + "workG": kG * runs, pkg + "workH": kH * runs, pkg + "mk": kMk * runs, pkg + "workI": kI * runs}
	for fn, n := range want {
		if got[fn] != n {
			t.Errorf("%s: %d objects, want %d", fn, got[fn], n)
		}
	}
	var total int64
	for fn, n := range got {
		total += n
		if _, ok := want[fn]; !ok && n != 0 {
			t.Errorf("%s: %d objects, want none", fn, n)
		}
	}
	var sum int64
	for _, n := range want {
		sum += n
	}
	if total != sum || c.Objects != sum {
		t.Errorf("%d objects in the profile, %d counted, want %d", total, c.Objects, sum)
	}
	if c.Shared == 0 {
		t.Errorf("workI's sites in mk and in its own code shared no allocation: %+v", c)
	}
	t.Logf("%+v", c)
}

// TestZeroSizeNotCounted: a zero-sized make reaches mallocgc, which
// returns before any allocator; it is no allocation.
func TestZeroSizeNotCounted(t *testing.T) {
	if ok, _ := IsAllocator("runtime.mallocgc"); ok {
		t.Error("mallocgc itself is an allocator")
	}
	for name, want := range map[string]int64{"runtime.mallocgcTiny": 0, "runtime.mallocgcLarge": 0, "runtime.mallocgcTinySize8": 8, "runtime.mallocgcSmallNoScanSC3": 24, "runtime.mallocgcSmallScanNoHeaderSC2": 16} {
		ok, b := IsAllocator(name)
		if !ok || b != want {
			t.Errorf("IsAllocator(%q) = %v, %d; want true, %d", name, ok, b, want)
		}
	}
	for _, name := range []string{"runtime.mallocgcSmallNoscanReuse", "runtime.mallocgcTinySizeX", "runtime.newobject"} {
		if ok, _ := IsAllocator(name); ok {
			t.Errorf("IsAllocator(%q) = true", name)
		}
	}
	zeroSized(0)
}

// TestStd tells the standard library's functions from a module's.
func TestStd(t *testing.T) {
	for name, want := range map[string]bool{
		"runtime.mallocgc": true, "strings.(*Builder).grow": true, "internal/bytealg.MakeNoZero": true,
		"encoding/json.Marshal": true, "example.com/m.F": false, "github.com/x/y/z.(*T).M": false, "main.main": false,
	} {
		if got := IsStd(name); got != want {
			t.Errorf("IsStd(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestReadErrors: a dump without contexts, and a malformed one.
func TestReadErrors(t *testing.T) {
	noCtx := "events: Ir\nfn=runtime.mallocgc\n0x10 1 5\ncfn=runtime.mallocgcTiny\ncalls=3 0x20 1\n0x11 1 30\n"
	if _, _, err := Read(strings.NewReader(noCtx), Malloc, nil); err == nil || !strings.Contains(err.Error(), "--separate-callers") {
		t.Errorf("a dump without contexts: %v", err)
	}
	bad := "events: Ir\nfn=runtime.mallocgc'x.F\ncfn=runtime.mallocgcTiny\ncalls=x 0x20 1\n0x11 1 30\n"
	if _, _, err := Read(strings.NewReader(bad), Malloc, nil); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("a bad calls= line: %v", err)
	}
	ok := "events: Ir\nfn=runtime.mallocgc'runtime.newobject'example.com/m.F'main.main\n0x10 1 5\ncfn=runtime.mallocgcTiny\ncalls=3 0x20 1\n0x11 1 30\n"
	p, c, err := Read(strings.NewReader(ok), Malloc, nil)
	if err != nil || c.Objects != 3 || selfObjects(p)["example.com/m.F"] != 3 {
		t.Errorf("a one-context dump: %v %+v", err, c)
	}
}
