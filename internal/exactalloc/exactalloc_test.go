package exactalloc

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// childEnv makes TestAllocChild, run by the tests under callgrind, run
// the workload.
const childEnv = "HOTBUDGET_EXACTALLOC_CHILD"

// The workload's allocations per round, known by hand.
const (
	kF   = 7  // workF: 8-byte objects without pointers (the tiny allocator's)
	kG   = 5  // workG: 24-byte buffers through strings.Builder
	kH   = 3  // workH: the same through the same standard library code
	kMk  = 4  // mk, inlined into workI: 16-byte slices with pointers (makeslice)
	kI   = 2  // workI itself: 8-byte slices without pointers (makeslice)
	kNw  = 3  // nw, inlined into workJ: new([2]*int) (go1.27: called directly)
	kJ   = 2  // workJ itself: new(uint64) (the same)
	kE   = 3  // workE: errors.Join, two objects each (made by the standard library's own code)
	runs = 10 // rounds
)

var (
	sink8 *uint64
	sinkS string
	sinkP *[2]*int
	sinkB []byte
	sinkL []*int
	sinkE error
	errE  = errors.New("e")
	two   = 2 // not constant: make goes through makeslice
	eight = 8
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

// mk is inlined into workI: its calls of makeslice and workI's share
// their target.
func mk() []*int { return make([]*int, two) }

//go:noinline
func workI() {
	for range kMk {
		sinkL = mk()
	}
	for range kI {
		sinkB = make([]byte, eight)
	}
}

// nw is inlined into workJ.
func nw() *[2]*int { return new([2]*int) }

//go:noinline
func workJ() {
	for range kNw {
		sinkP = nw()
	}
	for i := range kJ {
		p := new(uint64)
		*p = uint64(i)
		sink8 = p
	}
}

//go:noinline
func workE() {
	for range kE {
		sinkE = errors.Join(errE)
	}
}

// stringer's instantiations are distinct types: each one's assertion in
// workA misses its cache until the runtime, on about one miss in 1,024,
// adds it (allocating a new cache).
type stringer[T any] struct{}

func (stringer[T]) String() string { return "" }

// assertVals are values of kA types, made once (workA allocates nothing).
var assertVals = []any{stringer[int]{}, stringer[int8]{}, stringer[int16]{}, stringer[int32]{}, stringer[int64]{}, stringer[uint]{},
	stringer[uint8]{}, stringer[uint16]{}, stringer[uint32]{}, stringer[uint64]{}, stringer[float32]{}, stringer[float64]{}}

const kA = 12 // workA: type assertions to fmt.Stringer of kA types a round

var sinkN int

//go:noinline
func workA() {
	for _, v := range assertVals {
		if _, ok := v.(fmt.Stringer); ok {
			sinkN++
		}
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
	workA()
	workF()
	workG()
	workH()
	workI()
	workJ()
	workE()
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

// countChild runs TestAllocChild of the test binary exe under callgrind
// with extra options and returns its dump's path.
func countChild(t *testing.T, exe string, extra ...string) string {
	t.Helper()
	vg, err := valgrind.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
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
// inlined into, objects the compiled code allocates without mallocgc
// (go1.27's size-specialised allocators), and the standard library's own
// allocations charged to its caller. This binary, which go test stripped,
// names the runtime's functions by address (an option for each).
func TestCountsByHand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkByHand(t, exe, testSym)
}

// TestCountsByHandSymbols counts the same in the test binary built with
// its symbol table (go test -c, as record builds them): one pattern
// (Arg's) keeps mallocgc's and its allocators' contexts apart.
func TestCountsByHandSymbols(t *testing.T) {
	if _, err := valgrind.Find(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "exactalloc.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil || bi.GoVersion != runtime.Version() {
		t.Fatalf("go test -c built %s with %v (%v), not %s", bin, bi, err, runtime.Version())
	}
	malloc, args, err := Args(bin)
	if err != nil {
		t.Fatal(err)
	}
	if malloc != Malloc || len(args) != 2 || args[0] != Arg(Malloc) || !strings.HasSuffix(args[0], "=runtime.mallocgc*") || !strings.HasSuffix(args[1], "=runtime.morestack*") {
		t.Fatalf("Args of a binary with symbols: %q, %q", malloc, args)
	}
	b, err := binsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	sym := func(addr uint64) ([]callgrind.Frame, bool) {
		m, err := b.Resolve([]uint64{addr})
		if err != nil || len(m[addr]) == 0 {
			return nil, false
		}
		fs := m[addr]
		out := make([]callgrind.Frame, len(fs))
		for i, f := range fs { // innermost first: reversed; named as record names them
			name := f.Symbol
			if name == "" {
				name = f.Func
			}
			out[len(fs)-1-i] = callgrind.Frame{Func: name}
		}
		return out, true
	}
	checkByHand(t, bin, sym)
}

// checkByHand counts the workload of the test binary exe, whose addresses
// sym names, and checks its counts.
func checkByHand(t *testing.T, exe string, sym callgrind.Symbolizer) {
	t.Helper()
	malloc, args, err := Args(exe)
	if err != nil {
		t.Fatal(err)
	}
	dump := countChild(t, exe, args...)
	p, c, err := ReadFile(dump, malloc, sym)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	got := selfObjects(p)
	want := map[string]int64{pkg + "workF": kF * runs, pkg + "workG": kG * runs, pkg + "workH": kH * runs, pkg + "mk": kMk * runs, pkg + "workI": kI * runs,
		pkg + "nw": kNw * runs, pkg + "workJ": kJ * runs, pkg + "workE": 2 * kE * runs}
	for fn, n := range want {
		if got[fn] != n {
			t.Errorf("%s: %d objects, want %d", fn, got[fn], n)
		}
	}
	// workA allocates only when the runtime fills one of its caches: a
	// new cache, on a miss chosen at random; at most one a type.
	caches := got[pkg+"workA"]
	if caches > kA {
		t.Errorf("workA: %d objects, want at most %d (the runtime's new type-assertion caches)", caches, kA)
	}
	var total int64
	for fn, n := range got {
		total += n
		if _, ok := want[fn]; !ok && n != 0 && fn != pkg+"workA" {
			t.Errorf("%s: %d objects, want none", fn, n)
		}
	}
	sum := caches
	for _, n := range want {
		sum += n
	}
	if total != sum || c.Objects != sum {
		t.Errorf("%d objects in the profile, %d counted, want %d", total, c.Objects, sum)
	}
	// The type assertions' misses: at least one (each of kA types'
	// caches fills on about one miss in 1,024), at most one an assertion;
	// no other function of the workload asserts.
	if n := c.Misses[pkg+"workA"]; n < 1 || n > kA*runs {
		t.Errorf("workA: %d type-cache misses, want 1 to %d", n, kA*runs)
	}
	for fn, n := range c.Misses {
		if strings.HasPrefix(fn, pkg) && fn != pkg+"workA" {
			t.Errorf("%s: %d type-cache misses, want none", fn, n)
		}
	}
	if c.Shared < (kMk+kI)*runs {
		t.Errorf("workI's sites in mk and in its own code shared fewer than their %d allocations: %+v", (kMk+kI)*runs, c)
	}
	t.Logf("%s: %d options; %+v", runtime.Version(), len(args), c)
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
		"unique.newIndirectNode[go.shape.struct { net/netip.isV6 bool; net/netip.zoneV6 string }]": true,
		"example.com/m.G[go.shape.int]": false, "slices.Sort[go.shape.[]example.com/m.T]": true,
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

// TestReleases: the validated releases are counted, patch releases and
// release candidates included; a later release, whose runtime may reach
// its allocators along other paths, is refused, saying which are counted.
func TestReleases(t *testing.T) {
	for v, want := range map[string]bool{"go1.26.8": true, "go1.27.3": true, "go1.27rc1": true, "go1.26": true,
		"go1.28.0": false, "go1.25.4": false, "devel go1.28-abcdef": false, "": false} {
		if got := Validated(v); got != want {
			t.Errorf("Validated(%q) = %v, want %v", v, got, want)
		}
	}
	if !Validated(runtime.Version()) {
		t.Errorf("this test runs on %s, which is not validated: %v", runtime.Version(), ErrRelease)
	}
	if msg := ErrRelease.Error(); !strings.Contains(msg, "go1.26 and go1.27 only") {
		t.Errorf("ErrRelease: %q", msg)
	}
	if _, err := MallocName("/nonexistent/x.test"); err == nil || !strings.Contains(err.Error(), "/nonexistent/x.test") {
		t.Errorf("MallocName of a missing file: %v", err)
	}
}

// TestReadDirect: go1.27's compiled code calls an allocator directly; the
// allocator's chain of callers charges the allocation, and an
// allocator's slow path calling another allocator makes no second object.
func TestReadDirect(t *testing.T) {
	d := "events: Ir\n" +
		"fn=example.com/m.F\n0x10 1 5\ncfn=runtime.mallocgcTinySC2'example.com/m.F'main.main\ncalls=3 0x20 1\n0x11 1 30\n" +
		"fn=errors.Join\n0x30 1 5\ncfn=runtime.mallocgcSmallScanNoHeaderSC2'errors.Join'example.com/m.G'main.main\ncalls=2 0x40 1\n0x31 1 30\n" +
		"fn=runtime.mallocgcTinySlowPath\n0x50 1 5\ncfn=runtime.mallocgcSmallNoScanSC2'runtime.mallocgcTinySlowPath'runtime.mallocgcTinySC2'example.com/m.F\ncalls=1 0x60 1\n0x51 1 30\n"
	p, c, err := Read(strings.NewReader(d), Malloc, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := selfObjects(p)
	if c.Objects != 5 || got["example.com/m.F"] != 3 || got["example.com/m.G"] != 2 || c.Bytes {
		t.Errorf("direct calls: %v %+v", got, c)
	}
}

// TestReadResumed: an allocation of a function that the runtime resumed
// after a stack switch (its entry called morestack) carries a chain that
// is not its own (runtime.mcall's, here ending in a module's function);
// the callers of its call of morestack charge it.
func TestReadResumed(t *testing.T) {
	const junk = "runtime.mallocgc'runtime.slicebytetostring'runtime.mcall'runtime.gopark'example.com/m.Other"
	d := "events: Ir\n" +
		"fn=example.com/m.F\n0x10 1 5\ncfn=runtime.slicebytetostring\ncalls=3 0x100 1\n0x11 1 30\n" +
		"fn=example.com/m.Other\n0x20 1 5\ncfn=runtime.gopark\ncalls=1 0x400 1\n0x21 1 30\n" +
		"fn=runtime.gopark\n0x400 1 5\ncfn=runtime.mcall\ncalls=1 0x500 1\n0x401 1 30\n" +
		"fn=runtime.slicebytetostring\n0x100 1 1\ncfn=runtime.morestack_noctxt'runtime.slicebytetostring'example.com/m.F'main.main\ncalls=1 0x200 1\n0x101 1 3\n" +
		"cfn=runtime.mallocgc'runtime.slicebytetostring'example.com/m.F'main.main\ncalls=2 0x300 1\n0x102 1 9\n" +
		"cfn=" + junk + "\ncalls=1 0x300 1\n0x102 1 9\n" +
		"fn=runtime.mallocgc'runtime.slicebytetostring'example.com/m.F'main.main\n0x300 1 5\ncfn=runtime.mallocgcSmallNoscan\ncalls=2 0x600 1\n0x301 1 30\n" +
		"fn=" + junk + "\n0x300 1 5\ncfn=runtime.mallocgcSmallNoscan\ncalls=1 0x600 1\n0x301 1 30\n"
	p, c, err := Read(strings.NewReader(d), Malloc, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := selfObjects(p)
	if c.Objects != 3 || got["example.com/m.F"] != 3 || got["example.com/m.Other"] != 0 || c.Resumed != 1 {
		t.Errorf("resumed: %v %+v", got, c)
	}
	// Without morestack's contexts the chain is taken as it is.
	noCtx := strings.Replace(d, "cfn=runtime.morestack_noctxt'runtime.slicebytetostring'example.com/m.F'main.main", "cfn=runtime.morestack_noctxt", 1)
	p, c, err = Read(strings.NewReader(noCtx), Malloc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := selfObjects(p); got["example.com/m.Other"] != 1 || c.Resumed != 0 {
		t.Errorf("without morestack's contexts: %v %+v", got, c)
	}
}
