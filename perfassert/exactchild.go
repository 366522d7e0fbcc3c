// The child process of a counted capture (Instructions): its warm-up and
// counted phases under callgrind, and how its parent reads them.

package perfassert

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// countInChild counts fn under callgrind: one run to learn its count,
// then, in rounds, runs uninstrumented to warm it up (the runtime's
// type-assertion and type-switch caches fill at random, on about one miss
// in 1,024 chosen per process: until they are full, what an assertion
// costs depends on the process), then runs runs of it counted and 2*runs
// counted, each phase its own dump. A round whose phases executed no
// instruction in the runtime's cache-miss paths (exactMissFuncs) ends the
// warm-up: the counts repeat from there; after exactMaxRounds rounds, or
// exactWarmBudget instructions of warm-up, the last round stands, and the
// parent says so. The parent reads the dumps natively (under valgrind that
// takes seconds) and takes the difference of the two phases, what runs
// runs execute, free of anything a phase adds once.
func countInChild(fn func(), dir string) error {
	if valgrind.RunningOnValgrind() == 0 {
		return errors.New("perfassert: the exact child process does not run under valgrind")
	}
	runtime.MemProfileRate = 0
	countRuns(fn, 1)
	valgrind.DumpStatsAt(exactDump + " (one run)")
	one, _, err := dumpCost(filepath.Join(dir, "callgrind.out.1"), nil)
	if err != nil {
		return err
	}
	runs := exactRunsFor(one)
	seq, warmed, warm := 1, 0, runs
	var missed int64
	for round := 1; ; round++ {
		for i := range warm {
			if i%runs == runs-1 {
				runtime.GC() // GOGC=off: the warm-up's garbage
			}
			fn()
		}
		warmed += warm
		missed = 0
		var phases [2]map[string]int64
		for i, n := range []int{runs, 2 * runs} {
			runtime.GC()
			countRuns(fn, n)
			seq++
			valgrind.DumpStatsAt(fmt.Sprintf("%s (%d runs)", exactDump, n))
			m, err := phaseCounts(filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", seq)))
			if err != nil {
				return err
			}
			missed += m[missKey]
			phases[i] = m
		}
		settled := unsettled(phases[0], phases[1]) == ""
		// Counts that vary from run to run settle with more runs, within
		// the budget; beyond it another round would count the same.
		more := !settled && runs*10 <= exactMaxRuns && 3*float64(runs*10)*float64(max(one, 1)) <= exactCountBudget
		if (missed == 0 && !more) || round >= exactMaxRounds || float64(warmed)*float64(max(one, 1)) >= exactWarmBudget {
			break
		}
		if more {
			runs *= 10
		}
		warm = max(warm*4, runs)
	}
	note := fmt.Sprintf("%d %d %d %d %d\n", runs, countRunsPC(), seq, warmed, missed)
	return os.WriteFile(filepath.Join(dir, exactCounted), []byte(note), 0o644)
}

// Warm-up of an exact capture (countInChild).
const (
	// exactCountBudget bounds the instructions of a round's two counted
	// phases (3*runs runs) when runs grow for counts that vary from run to
	// run (unsettled): a few seconds under callgrind. (Counting 100 runs of
	// mapstructure's 2.5 million instructions, 770 million, took minutes
	// on a loaded machine; 10 runs held its noisiest function to a third
	// of the tolerance.)
	exactCountBudget = 1e8
	// exactMaxRounds bounds the rounds of warm-up and counting.
	exactMaxRounds = 6
	// exactWarmBudget bounds the instructions of warm-up (uninstrumented
	// under valgrind, some 200 million a second here).
	exactWarmBudget = 2e9
)

// exactMissFuncs are the runtime's functions that code calls when its
// type-assertion or type-switch cache misses (runtime/iface.go): while
// they run, the caches may still grow, at random.
var exactMissFuncs = map[string]bool{"runtime.typeAssert": true, "runtime.interfaceSwitch": true}

// exactCounted is the file in which a child says what it counted: "runs
// pc last warmed missed": the runs of the first of its last two dumps (the
// second counts twice as many), where this process has countRuns, the
// number of its last dump, the runs of warm-up and the instructions of
// the cache-miss paths in the last two dumps.
const exactCounted = "counted"

// countRunsPC is the address of countRuns in this process: the parent and
// the child are one binary, so the difference of their addresses moves
// the child's to the parent's (zero unless the binary is
// position-independent).
func countRunsPC() uintptr { return reflect.ValueOf(countRuns).Pointer() }

// exactNote is what a child counted, as its note says.
type exactNote struct {
	runs     int
	pc       uint64
	last     int // the number of the dump of 2*runs runs
	warmed   int
	missed   int64
	warnings []string
}

// readCounted reads what the child in dir counted: the difference of its
// last two dumps (2*runs runs less runs runs), symbolised in this process.
func readCounted(dir, name string) (*profile.Profile, exactNote, error) {
	var n exactNote
	data, err := os.ReadFile(filepath.Join(dir, exactCounted))
	if err != nil {
		return nil, n, err
	}
	if _, err := fmt.Sscan(string(data), &n.runs, &n.pc, &n.last, &n.warmed, &n.missed); err != nil || n.runs < 1 || n.last < 3 {
		return nil, n, fmt.Errorf("perfassert: the child's note %q: %v", data, err)
	}
	shift := uint64(countRunsPC()) - n.pc
	var phases [2]*profile.Profile
	for i := range phases {
		dump := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", n.last-1+i))
		f, err := os.Open(dump)
		if err != nil {
			return nil, n, fmt.Errorf("perfassert: callgrind's dump: %w", err)
		}
		p, err := callgrind.ParseByAddress(f, pbuild.Options{Name: dump}, func(addr uint64) ([]callgrind.Frame, bool) {
			fs, ok := runtimeFrames(addr + shift)
			if ok && len(fs) > 1 {
				inlined.note(fs)
			}
			return fs, ok
		})
		f.Close()
		if err != nil {
			return nil, n, fmt.Errorf("perfassert: callgrind's dump %s: %w", dump, err)
		}
		for _, w := range loaderWarnings(p) {
			if !slices.Contains(n.warnings, w) {
				n.warnings = append(n.warnings, w)
			}
		}
		phases[i] = trimExact(p)
	}
	// What both phases executed alike cancels: their start, and the
	// work that did not repeat (the runtime's monitor thread, timers).
	p, _, err := valgrind.Difference(phases[1], phases[0])
	if err != nil {
		return nil, n, fmt.Errorf("perfassert: the difference of callgrind's dumps: %w", err)
	}
	for _, s := range p.Sample {
		s.Label = map[string][]string{meta.LabelRun: {"1"}}
	}
	// A capture from here on, its facts kept typed (without the loader's
	// format and warnings: a capture says what it is); runExactChild
	// completes its record and writes its comments.
	meta.Keep(p, meta.Facts{Exact: true, HasRecord: true, Record: meta.Record{Name: name, Build: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Race: raceEnabled,
		WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "1", Work: float64(n.runs)}}}})
	return p, n, nil
}

// exactTarget is about how many instructions a counted phase of runs
// executes (the second phase twice as many): callgrind runs some 30
// million a second here.
const exactTarget = 10_000_000

// exactRunsFor is how many runs to count of a function that executes one
// instructions a run: the largest power of ten whose runs execute at most
// exactTarget, from 1 to exactMaxRuns. A count, not a time, so that every
// process counts the same runs of the same code.
func exactRunsFor(one int64) int {
	runs := 1
	for runs*10 <= exactMaxRuns && int64(runs*10)*max(one, 1) <= exactTarget {
		runs *= 10
	}
	return runs
}

// dumpCost is the sum of the self costs (the first event) of a callgrind
// dump written with positions "instr line", and the part of it at the
// addresses in reports true for (none without in); each, when given, sees
// every such address with its cost.
func dumpCost(path string, in func(addr uint64) bool, each ...func(addr uint64, v int64)) (total, part int64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("perfassert: callgrind's dump: %w", err)
	}
	call := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "calls="):
			call = true
		case strings.HasPrefix(line, "0x"):
			f := strings.Fields(line)
			if !call && len(f) >= 3 {
				v, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("perfassert: callgrind's dump %s: cost line %q", path, line)
				}
				total += v
				if in != nil && v != 0 {
					if addr, err := strconv.ParseUint(f[0][2:], 16, 64); err == nil && in(addr) {
						part += v
						for _, e := range each {
							e(addr, v)
						}
					}
				}
			}
			call = false
		}
	}
	return total, part, nil
}

// countRunsName is countRuns's name in a profile.
var countRunsName = funcName(countRuns)

// countRuns runs fn runs times with callgrind's instrumentation on: the
// root of every stack of fn in the dump.
//
//go:noinline
func countRuns(fn func(), runs int) {
	valgrind.StartInstrumentation()
	valgrind.ZeroStats()
	for range runs {
		fn()
	}
	valgrind.StopInstrumentation()
}

// runtimeFrames names the code at an address as runtime/pprof does, from
// this binary's own line table: the compiled function, then, when the
// address is in code inlined into it, the innermost inlined function. (The
// runtime's API names only those two for an address: the functions inlined
// in between, when inlining nests, are on no stack of an exact capture,
// while their own code counts as theirs.)
func runtimeFrames(addr uint64) ([]callgrind.Frame, bool) {
	f := runtime.FuncForPC(uintptr(addr))
	if f == nil {
		return nil, false
	}
	// runtime/pprof names a function by its symbol (a generic one with
	// its shape, pkg.F[go.shape.int]), and an address in inlined code
	// by the innermost function there, as FuncForPC does.
	outer := runtime.FuncForPC(f.Entry())
	if outer == nil {
		outer = f
	}
	file, _ := outer.FileLine(f.Entry())
	frames := []callgrind.Frame{{Func: symbolName(outer.Name(), uint64(f.Entry()), false), File: file}}
	if f.Name() != outer.Name() {
		file, _ := f.FileLine(uintptr(addr))
		frames = append(frames, callgrind.Frame{Func: symbolName(f.Name(), addr, true), File: file})
	}
	return frames, true
}

// inlined is, for each function found inlined in the code this process's
// counted captures executed, the compiled functions its code was in: what
// a count report notes of a changed function (CountReport.NoteInlined).
// One binary's, this one's, as every capture it reads is.
var inlined inlinedSeen

type inlinedSeen struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

// note keeps that frames' innermost function is inlined into the
// outermost (runtimeFrames: outermost first).
func (s *inlinedSeen) note(frames []callgrind.Frame) {
	outer, inner := frames[0].Func, frames[len(frames)-1].Func
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]bool{}
	}
	if s.m[inner] == nil {
		s.m[inner] = map[string]bool{}
	}
	s.m[inner][outer] = true
}

// into is, for each inlined function seen, the functions it was in.
func (s *inlinedSeen) into() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.m))
	for f, set := range s.m {
		for g := range set {
			out[f] = append(out[f], g)
		}
	}
	return out
}

// ownBinary is this binary's symbol table, read when a generic function
// needs its symbol name.
var ownBinary = sync.OnceValue(func() *binsym.Binary {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	b, err := binsym.Open(exe)
	if err != nil {
		return nil
	}
	return b
})

// symbolName is the symbol name runtime/pprof gives the function printed
// as name at pc (the innermost one with inner, else the outermost): the
// runtime prints a generic function's type arguments as "...", runtime/pprof
// writes its symbol, with the shape (pkg.F[go.shape.int]), which the
// binary's line table holds.
func symbolName(name string, pc uint64, inner bool) string {
	if !strings.Contains(name, "[...]") {
		return name
	}
	b := ownBinary()
	if b == nil {
		return name
	}
	m, err := b.Resolve([]uint64{pc})
	if err != nil || len(m[pc]) == 0 {
		return name
	}
	fr := m[pc][len(m[pc])-1]
	if inner {
		fr = m[pc][0]
	}
	if fr.Func != name || fr.Symbol == "" {
		return name // the binary has no inlined frames (no DWARF)
	}
	return fr.Symbol
}

// trimExact drops perfassert's and the client requests' own frames from a
// child's profile: the counting loop at the root of fn's stacks, and the
// few instructions of the loop and the requests themselves.
func trimExact(p *profile.Profile) *profile.Profile {
	own := func(l *profile.Location) bool {
		for _, ln := range l.Line {
			if ln.Function != nil && (ln.Function.Name == countRunsName || strings.HasPrefix(ln.Function.Name, valgrindPkg)) {
				return true
			}
		}
		return false
	}
	kept := p.Sample[:0]
	for _, s := range p.Sample {
		locs := s.Location
		if len(locs) > 0 && own(locs[0]) {
			// The harness's own instructions, wherever callgrind's
			// graph put them: after a stack switch it can take a
			// return into countRuns for a jump within another block.
			continue
		}
		for len(locs) > 0 && own(locs[len(locs)-1]) {
			locs = locs[:len(locs)-1]
		}
		if len(locs) == 0 {
			continue
		}
		s.Location = locs
		kept = append(kept, s)
	}
	p.Sample = kept
	return p.Compact()
}

// valgrindPkg is the prefix of the client requests' function names.
const valgrindPkg = "github.com/hotbudget/hotbudget/internal/valgrind."

// Counts that vary from run to run (issue 42). Some code's count depends
// on the runtime's randomness in every run, not only until its caches
// fill: a map's iteration starts at a random place and each new map has
// its own hash seed, so a loop over a map that stops at a key
// (go-viper/mapstructure's decodeStructFromMap matching field names)
// executes a random number of iterations. Counting one run, as a 2.5
// million-instruction function was, its count moved by 1% between
// processes and failed unchanged code (a baseline's five processes showed
// less spread than that). Such noise shrinks as more runs are counted: a
// round is settled when no function of the module moved, between its two
// phases, by more than exactNoise of what the comparison tolerates, and
// an unsettled round counts ten times as many runs in the next one.

// missKey is the key of phaseCounts's map under which it sums the
// instructions of the runtime's cache-miss paths (exactMissFuncs).
const missKey = "\x00miss"

// Noise a settled round allows (unsettled).
const (
	// exactTolerance is diff.CompareCounts's smallest verdict, as a
	// fraction of a function's count (its countTolerance).
	exactTolerance = 0.005
	// exactNoise is the part of exactTolerance that the difference of a
	// round's two phases may move a function's count by: about a third,
	// so that the counts judged (runs runs, whose spread is about 1/1.4 of
	// that difference's) stay some four spreads within the tolerance.
	exactNoise = 1.0 / 3
	// exactNoiseFloor is the smallest count, in instructions, that is
	// noise: a function of a few hundred instructions that moves by one
	// or two is not.
	exactNoiseFloor = 64
)

// phaseCounts reads a counted phase's dump at path: the self count of each
// function of the module (moduleFuncs; every function when it is not
// known), as an exact capture names them (the innermost inlined function),
// and under missKey the instructions of the cache-miss paths.
func phaseCounts(path string) (map[string]int64, error) {
	re := moduleFuncs()
	names := map[uint64]string{}
	counts := map[string]int64{}
	_, _, err := dumpCost(path, func(addr uint64) bool {
		n, ok := names[addr]
		if !ok {
			if f := runtime.FuncForPC(uintptr(addr)); f != nil {
				n = f.Name()
			}
			names[addr] = n
		}
		return n != ""
	}, func(addr uint64, v int64) {
		n := names[addr]
		switch {
		case exactMissFuncs[n]:
			counts[missKey] += v
		case n != "" && (re == nil || re.MatchString(n)):
			counts[n] += v
		}
	})
	return counts, err
}

// unsettled names the function of the module whose count moved most
// beyond the noise a round allows between its phases once (runs runs)
// and twice (2*runs runs): "" when none did. Without randomness a
// function's second count is twice its first.
func unsettled(once, twice map[string]int64) string {
	worst, by := "", 0.0
	for n, b := range twice {
		if n == missKey {
			continue
		}
		a := once[n]
		moved := math.Abs(float64(b - 2*a))
		allowed := max(exactNoise*exactTolerance*float64(b-a), exactNoiseFloor)
		if moved > allowed && moved/allowed > by {
			worst, by = n, moved/allowed
		}
	}
	return worst
}
