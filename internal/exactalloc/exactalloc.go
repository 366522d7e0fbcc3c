// Package exactalloc counts a Go program's allocations exactly under
// valgrind's callgrind, tiny objects included, and charges each to the
// function that made it.
//
// A heap object of a Go program is made by one of the runtime's
// allocators, called once per object: mallocgcTiny, mallocgcSmallNoscan,
// mallocgcSmallScanNoHeader, mallocgcSmallScanHeader, mallocgcLarge and,
// with size-specialised malloc (GOEXPERIMENT=sizespecializedmalloc in
// go1.26, the default from go1.27 on), mallocgcTinySize<n> (go1.26),
// mallocgcTinySC2 (go1.27), mallocgcSmallNoScanSC<n> and
// mallocgcSmallScanNoHeaderSC<n>. Most allocations reach them through
// runtime.mallocgc (newobject, makeslice, growslice, the convT functions,
// rawstring and the string conversions all call it; a call of size 0
// returns the runtime's zerobase before any allocator and allocates
// nothing); go1.27's compiled code calls the size-specialised ones
// directly for new(T) and escaping variables of up to 80 bytes. An
// allocator's slow path may call another allocator for the same object.
// So the calls into an allocator from any function but the runtime's
// allocation functions (mallocgc excepted) are the allocations, one each,
// where the runtime's memory profile sees a tiny object only when it opens
// a 16-byte block.
//
// Callgrind's call graph says how often an allocator was called, not for
// whom. Arg and Args ask callgrind to keep mallocgc and its allocators
// apart by their chains of callers (--separate-callers<Depth>): their
// blocks are then named
// "runtime.mallocgc'runtime.growslice'strings.(*Builder).grow'pkg.F...",
// and Read charges each allocation to the first function of the chain
// (mallocgc's when it went through it, else the allocator's) outside the
// runtime and the standard library (pkg.F: what it allocates through
// strings.Builder is its own). Callgrind's chains name compiled
// functions; which function inlined into pkg.F made the allocation is read
// from pkg.F's call sites into the chain's next function (or the
// allocator), through the symbolizer (which knows inlining): when all of
// them are in one inlined function (or in pkg.F's own code), the count is
// exact; when several functions inlined into pkg.F call it, the count is
// shared among them by their calls (exact when each call allocates alike),
// and Read says so.
//
// Bytes are exact where the allocator's name says the size (go1.26's
// mallocgcTinySize<n>: a tiny object's size; the size-specialised
// allocators of a size class: the class's bytes); otherwise (go1.27's
// tiny objects, every object without size-specialised malloc) they are
// not counted and the profile says so (Counts.Bytes false).
package exactalloc

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"go/version"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/internal/callgrind"
)

// Depth is how many callers of mallocgc name its contexts: enough for
// the standard library's ordinary chains from a module's function to
// mallocgc (fmt.Sprintf: Sprintf, doPrintf, printArg, fmtInteger..., then
// growslice). Allocations whose chain of Depth callers names no function
// outside the standard library stay on the chain's stack, its innermost
// function as their leaf (Counts.Std).
const Depth = 12

// Malloc is the runtime's allocation entry point.
const Malloc = "runtime.mallocgc"

// Arg returns the callgrind option that keeps the contexts of mallocgc
// and its allocators apart, for a program in which callgrind names mallocgc
// name (see MallocName): it goes into valgrind.Run's Extra. With the
// symbol's name, one pattern covers them all (runtime.mallocgc*); with an
// address (a binary without a symbol table) it covers mallocgc alone, and
// Args gives the allocators' options too.
func Arg(name string) string {
	if name == Malloc {
		name += "*"
	}
	return fmt.Sprintf("--separate-callers%d=%s", Depth, name)
}

// Args returns the callgrind options under which a dump of the Go
// executable at path holds its allocations, each charged through its
// chain of callers, and the name Read wants (MallocName's): Arg's, and the
// contexts of runtime.morestack (see Counts.Resumed); in a binary without
// a symbol table, one option for each function's address: mallocgc's,
// each allocator's (go1.27's compiled code calls them directly) and the
// stack checks'.
func Args(path string) (malloc string, args []string, err error) {
	b, err := inspect(path)
	if err != nil {
		return "", nil, err
	}
	args = []string{Arg(b.malloc)}
	if b.malloc == Malloc {
		args = append(args, fmt.Sprintf("--separate-callers%d=%s*", Depth, Morestack))
	}
	for _, a := range b.entries {
		args = append(args, fmt.Sprintf("--separate-callers%d=0x%016x", Depth, a))
	}
	return b.malloc, args, nil
}

// MallocName returns the name callgrind gives runtime.mallocgc in the Go
// executable at path: the symbol's name when the binary has a symbol
// table, else (a binary go test stripped) the function's entry address as
// callgrind writes an unnamed function ("0x0000000000481fe0"), read from
// the Go line table. A position-independent binary is refused: its
// addresses at run time are not the file's; so is one built by a release
// not in ValidatedReleases (ErrRelease).
func MallocName(path string) (string, error) {
	b, err := inspect(path)
	if err != nil {
		return "", err
	}
	return b.malloc, nil
}

// binary is what inspect finds in an executable.
type binary struct {
	malloc  string   // callgrind's name of mallocgc
	entries []uint64 // without a symbol table: the allocators' and stack checks' entries
}

// inspect reads how callgrind names mallocgc and its allocators in the
// executable at path.
func inspect(path string) (binary, error) {
	if err := Supported(path); err != nil {
		return binary{}, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return binary{}, fmt.Errorf("exactalloc: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return binary{}, fmt.Errorf("exactalloc: %s is position-independent (%v): allocations are counted in the default build mode only", path, f.Type)
	}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == Malloc && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				return binary{malloc: Malloc}, nil
			}
		}
	}
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return binary{}, fmt.Errorf("exactalloc: %s has neither a symbol table nor a Go line table naming %s", path, Malloc)
	}
	data, err := pcln.Data()
	if err != nil {
		return binary{}, fmt.Errorf("exactalloc: %s: %w", path, err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return binary{}, fmt.Errorf("exactalloc: %s: the Go line table: %w", path, err)
	}
	fn := tab.LookupFunc(Malloc)
	if fn == nil {
		return binary{}, fmt.Errorf("exactalloc: %s has no %s in its line table", path, Malloc)
	}
	b := binary{malloc: fmt.Sprintf("0x%016x", fn.Entry)}
	for _, g := range tab.Funcs {
		if ok, _ := IsAllocator(g.Name); ok || isMorestack(g.Name) {
			b.entries = append(b.entries, g.Entry)
		}
	}
	return b, nil
}

// IsAllocator reports whether name is one of mallocgc's allocators (its
// calls from mallocgc are allocations), and the bytes an allocation takes
// when the name says (0: not known).
func IsAllocator(name string) (ok bool, bytes int64) {
	rest, found := strings.CutPrefix(name, "runtime.mallocgc")
	if !found || rest == "" || strings.Contains(rest, "Reuse") {
		return false, 0
	}
	for _, k := range []struct {
		prefix string
		size   func(int) int64
	}{
		{"TinySize", func(n int) int64 { return int64(n) }},
		{"TinySC", func(int) int64 { return 0 }}, // go1.27: the block's class, not the object's size
		{"SmallNoScanSC", classBytes},
		{"SmallScanNoHeaderSC", classBytes},
	} {
		if s, ok := strings.CutPrefix(rest, k.prefix); ok {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				return true, k.size(n)
			}
			return false, 0
		}
	}
	switch rest {
	case "Tiny", "SmallNoscan", "SmallScanNoHeader", "SmallScanHeader", "Large":
		return true, 0
	}
	return false, 0
}

// sizeClasses are the Go runtime's small object size classes
// (internal/runtime/gc/sizeclasses.go), by class.
var sizeClasses = []int64{0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512,
	576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192,
	9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

func classBytes(n int) int64 {
	if n < len(sizeClasses) {
		return sizeClasses[n]
	}
	return 0
}

// IsStd reports whether the function named name is the runtime's or the
// standard library's: its package path has no dot in its first element
// ("strings.(*Builder).grow", "internal/bytealg.MakeNoZero"), as a
// module's path has ("example.com/m.F", "github.com/x/y.F").
func IsStd(name string) bool {
	// A generic instantiation's type arguments name other packages
	// ("unique.newIndirectNode[go.shape.struct { net/netip.isV6 bool }]").
	name, _, _ = strings.Cut(name, "[")
	first, _, _ := strings.Cut(name, "/")
	if !strings.Contains(name, "/") {
		first, _, _ = strings.Cut(name, ".")
		return first != "main" && first != ""
	}
	return !strings.Contains(first, ".")
}

// chainAllocs is what one allocator allocated for one chain of callers.
type chainAllocs struct {
	objects, bytes int64
	unsized        int64    // objects of allocators whose name gives no size
	alloc          string   // the allocator (compiled function)
	callers        []string // as callgrind names them, innermost first
	context        bool     // callers holds a chain of callgrind's contexts
}

// site is a call site: its address and calls.
type site struct {
	addr   uint64
	calls  int64
	target uint64 // the address the calls entered the callee at
}

// dump is what Read gathers from a callgrind file.
type dump struct {
	chains map[string]*chainAllocs // by allocator and chain of callers
	order  []string
	arcs   map[[2]string][]site // by (caller, callee), compiled functions
	// reentries are the calls of morestack's contexts (reentry.go).
	reentries []reentry
}

// maxLine bounds one line of a dump.
const maxLine = callgrind.MaxLineBytes

// scan reads a callgrind file written with --dump-instr=yes (positions
// "instr line", the first an address) and uncompressed names, as
// valgrind.Run writes it. Every call into an allocator from a function
// that is not one of the runtime's allocation functions (mallocgc's
// family: an allocator's slow path calls another allocator for the same
// object) is an allocation.
func scan(r io.Reader, sym callgrind.Symbolizer) (*dump, error) {
	d := &dump{chains: map[string]*chainAllocs{}, arcs: map[[2]string][]site{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var fn, cfn string
	var last uint64
	var pendingCalls int64 = -1
	var target uint64
	entry := map[string]uint64{} // the lowest target of each callee's calls
	var special []call           // into allocators and morestack
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "fn="):
			fn = line[3:]
		case strings.HasPrefix(line, "cfn="):
			cfn = line[4:]
		case strings.HasPrefix(line, "calls="):
			f := strings.Fields(line[6:])
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: calls= without a count and a target: %q", lineNo, line)
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("line %d: calls= count %q", lineNo, f[0])
			}
			t, err := position(f[1], last)
			if err != nil {
				return nil, fmt.Errorf("line %d: calls= target: %w", lineNo, err)
			}
			pendingCalls, target = n, t
		case line != "" && isPos(line[0]):
			field, _, _ := strings.Cut(line, " ")
			a, err := position(field, last)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			last = a
			if pendingCalls < 0 {
				continue
			}
			calls := pendingCalls
			pendingCalls = -1
			callee := physName(sym, target, cfn)
			caller := physName(sym, a, fn)
			if e, ok := entry[callee]; !ok || target < e {
				entry[callee] = target
			}
			if ok, _ := IsAllocator(callee); (ok && !inMallocFamily(caller)) || (isMorestack(callee) && !isMorestack(caller)) {
				special = append(special, call{fn, cfn, callee, calls, target})
			}
			k := [2]string{caller, callee}
			d.arcs[k] = append(d.arcs[k], site{a, calls, target})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// A call's target is the callee's entry, but for callgrind's own: when
	// a function returns to one its shadow stack does not hold (after a
	// stack switch), callgrind takes the return for a call into the middle
	// of that function. The calls of a function at its lowest target are
	// its calls.
	for _, c := range special {
		if c.target != entry[c.callee] {
			continue
		}
		if ok, bytes := IsAllocator(c.callee); ok {
			d.add(c.fn, c.cfn, c.callee, c.calls, bytes)
		} else {
			d.addReentry(c.cfn, c.calls)
		}
	}
	for k, sites := range d.arcs {
		e := entry[k[1]]
		d.arcs[k] = slices.DeleteFunc(sites, func(s site) bool { return s.target != e })
		if len(d.arcs[k]) == 0 {
			delete(d.arcs, k)
		}
	}
	return d, nil
}

// call is a call line of a dump: the calls from the block fn into cfn,
// the compiled function callee, at target.
type call struct {
	fn, cfn, callee string
	calls           int64
	target          uint64
}

// add counts calls into allocator alloc, named cfn in the dump, from the
// block fn: the chain of callers is the longer of fn's (its name, then
// its callers when callgrind kept its contexts: mallocgc's) and cfn's
// (the allocator's callers, when callgrind kept its contexts).
func (d *dump) add(fn, cfn, alloc string, calls, bytes int64) {
	callers := strings.Split(fn, "'")
	context := len(callers) > 1
	if parts := strings.Split(cfn, "'"); len(parts) > 1 {
		context = true
		if len(parts)-1 > len(callers) {
			callers = parts[1:]
		}
	}
	key := alloc + "\x00" + strings.Join(callers, "'")
	c := d.chains[key]
	if c == nil {
		c = &chainAllocs{alloc: alloc, callers: callers, context: context}
		d.chains[key] = c
		d.order = append(d.order, key)
	}
	c.objects += calls
	c.bytes += calls * bytes
	if bytes == 0 {
		c.unsized += calls
	}
}

// inMallocFamily reports whether the function named name is one of the
// runtime's allocation functions other than mallocgc itself: an
// allocator, its slow path, its reuse path.
func inMallocFamily(name string) bool {
	return strings.HasPrefix(name, Malloc) && name != Malloc
}

// isPos reports whether a line starting with b is a cost line.
func isPos(b byte) bool { return b == '0' || b == '+' || b == '-' || b == '*' }

// position reads an instruction position: absolute ("0x4004d0"), relative
// to the last ("+3", "-2") or the same ("*").
func position(s string, last uint64) (uint64, error) {
	switch {
	case s == "*":
		return last, nil
	case strings.HasPrefix(s, "0x"):
		return strconv.ParseUint(s[2:], 16, 64)
	case strings.HasPrefix(s, "+"), strings.HasPrefix(s, "-"):
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("position %q", s)
		}
		return uint64(int64(last) + v), nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, nil
	}
	return 0, fmt.Errorf("position %q", s)
}

// physName is the compiled function of the code at addr, as sym names it,
// else the function callgrind's name (a chain's first) gives.
func physName(sym callgrind.Symbolizer, addr uint64, name string) string {
	if sym != nil && addr != 0 {
		if fr, ok := sym(addr); ok && len(fr) > 0 {
			return fr[0].Func
		}
	}
	first, _, _ := strings.Cut(name, "'")
	return resolveName(sym, first)
}

// resolveName is the function callgrind names name: an unnamed function's
// address ("0x...") through sym, else the name.
func resolveName(sym callgrind.Symbolizer, name string) string {
	if sym != nil && strings.HasPrefix(name, "0x") {
		if v, err := strconv.ParseUint(name[2:], 16, 64); err == nil {
			if fr, ok := sym(v); ok && len(fr) > 0 {
				return fr[0].Func
			}
		}
	}
	return name
}

// ErrNoContexts is Read's error for a dump in which mallocgc's blocks
// carry no chain of callers: callgrind ran without Arg.
var ErrNoContexts = errors.New("the dump has no contexts of runtime.mallocgc (callgrind ran without --separate-callers)")

// openDump opens a dump for Read.
func openDump(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("exactalloc: %w", err)
	}
	return f, nil
}

// ValidatedReleases are the Go releases whose runtimes' allocation paths
// the charging of allocations to their callers was built and tested on.
var ValidatedReleases = []string{"go1.26", "go1.27"}

// ErrRelease says that a binary was built by a Go release whose runtime's
// allocation paths were not validated (ValidatedReleases): a later one may
// reach its allocators along other paths, where allocations would be
// missed or charged to the wrong functions; they are not counted there.
var ErrRelease = errors.New("exactalloc: allocations are counted for binaries of " + strings.Join(ValidatedReleases, " and ") + " only")

// Validated reports whether a binary built by goVersion (as
// runtime.Version or debug/buildinfo gives it: "go1.27.3") is counted.
func Validated(goVersion string) bool {
	return slices.Contains(ValidatedReleases, version.Lang(goVersion))
}

// Supported reports whether the binary at path was built by one of
// ValidatedReleases, or why its allocations are not counted.
func Supported(path string) error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("exactalloc: %s: %w", path, err)
	}
	if !Validated(bi.GoVersion) {
		return fmt.Errorf("%w: %s was built by %s", ErrRelease, path, bi.GoVersion)
	}
	return nil
}
