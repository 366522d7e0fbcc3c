package perfassert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/internal/valgrind"
	"github.com/hotbudget/hotbudget/limits"
)

// The exact instrument (issue 31): instructions counted by valgrind's
// callgrind in a child process of the test binary, instead of CPU time
// sampled in this one. A count of instructions does not depend on the
// machine's load, its other processes or its clock, so a baseline of
// counts recorded on a laptop holds on a CI runner, and a change of a
// function's work by a fraction of a percent shows in every run.

// Instructions makes Capture count the instructions fn executes, function
// by function, instead of sampling its CPU time: the test runs again in a
// child process of the test binary under valgrind's callgrind, which counts
// every instruction of N runs of fn after one uncounted run, and the
// capture is an ordinary pprof profile with sample type
// "instructions/count" (self and total per function, inlined functions
// included, named as runtime/pprof names them; go tool pprof reads it)
// whose iterations are the N runs. Its values are counts, never durations:
// bound them with MaxSelfInstructions, MaxTotalInstructions and the share
// limits, or compare them with MatchBaseline, which judges counts exactly.
//
// N is a power of ten chosen from the count of the uncounted run, so that
// the counted runs execute about 30 million instructions (at most 10,000
// runs, at least one), about a second under callgrind; from a count, not a
// time, so that every process counts the same runs. A test capturing a 10ms
// function this way takes about 2s.
//
// The child runs with GOMAXPROCS=1 (goroutines fn starts run on the same
// thread and are counted; callgrind's call graph is right only then),
// GOGC=off (the collector's work is not fn's, and its timing is the
// machine's), GODEBUG=asyncpreemptoff=1 (callgrind cannot take Go's
// preemption signal) and runtime.MemProfileRate = 0. Counted are the
// instructions of every thread while fn runs: fn, the goroutines it
// starts, and the runtime's monitor thread (sysmon), whose few thousand
// instructions vary with wall time and are the runtime's.
//
// Instructions do not see what an instruction costs: cache misses, branch
// mispredictions, system calls, I/O and waiting are invisible, and so is
// the collector (off). Choose time (the default) for absolute time budgets
// and for comparisons made on one machine; choose instructions for golden
// baselines committed with the code and checked on any runner.
//
// Linux on amd64 or arm64 only, with valgrind installed (Debian and
// Ubuntu: apt-get install valgrind); elsewhere, or without valgrind, the
// test is skipped with a message saying so, once per test binary in full.
// It counts in tests, not benchmarks (a benchmark's function runs once for
// every round of b.N). A test may make several such captures; each runs
// its own child process,
// which runs the test up to that capture. Code the test runs before it runs
// again in the child, under valgrind (uncounted, several times slower).
func Instructions() CaptureOption {
	return captureFunc(func(c *captureConfig) { c.exact = true })
}

// Environment of the child process.
const (
	// exactChildEnv carries the child's directory and the index of the
	// capture it counts among the test's exact captures: "dir|index".
	exactChildEnv = "HOTBUDGET_EXACT_CHILD"
	// exactMaxRuns bounds the counted runs.
	exactMaxRuns = 10000
	// exactDump is the reason the child gives its dump.
	exactDump = "hotbudget exact capture"
	// instrumentCallgrind is what an exact capture's record names as its
	// instrument, before valgrind's version.
	instrumentCallgrind = "callgrind"
)

// exactPlan is what a child process counts: the capture at index among
// the exact captures of the test called test.
type exactPlan struct {
	test  string
	index int
	name  string // the capture's name
}

// exactChild returns the child's directory and the index of the capture
// it counts, in a child process.
func exactChild() (dir string, index int, ok bool) {
	dir, index, _, ok = exactChildPlan()
	return dir, index, ok
}

// exactChildPlan is exactChild with the name of the test whose capture
// the child counts: "dir|index|test".
func exactChildPlan() (dir string, index int, test string, ok bool) {
	v := os.Getenv(exactChildEnv)
	if v == "" {
		return "", 0, "", false
	}
	parts := strings.SplitN(v, "|", 3)
	if len(parts) < 2 {
		return "", 0, "", false
	}
	index, err := strconv.Atoi(parts[1])
	if err != nil || index < 0 {
		return "", 0, "", false
	}
	if len(parts) == 3 {
		test = parts[2]
	}
	return parts[0], index, test, true
}

// exactKey tells one run of a test from another: its name, and the
// *testing.T of this run (go test -count=2 runs a test twice under one
// name, each run with its own T).
type exactKey struct {
	test string
	t    uintptr
}

// exactCounts numbers the exact captures of each run of a test in this
// process, so that a child counts the one its parent asked for.
var (
	exactMu     sync.Mutex
	exactCounts = map[exactKey]int{}
	// exactPlans remembers how each exact capture of this process was
	// made, for MatchBaseline to record more processes of it.
	exactPlans = map[*profile.Profile]exactPlan{}
)

// nextExactIndex returns the index of the next exact capture of this run
// of test: 0 for the first capture of every run (the child process runs
// the test once), whatever ran before under the same name.
func nextExactIndex(t TestingT, test string) int {
	key := exactKey{test: test}
	if v := reflect.ValueOf(t); v.Kind() == reflect.Pointer {
		key.t = v.Pointer()
	}
	exactMu.Lock()
	defer exactMu.Unlock()
	i, seen := exactCounts[key]
	exactCounts[key] = i + 1
	if !seen {
		if cl, ok := t.(interface{ Cleanup(func()) }); ok {
			cl.Cleanup(func() {
				exactMu.Lock()
				delete(exactCounts, key)
				exactMu.Unlock()
			})
		}
	}
	return i
}

// errNotCounted is what a capture returns in a child process that counts
// another capture of the test.
var errNotCounted = errors.New("perfassert: this child process counts another capture of the test")

// exactSkip is an error that skips the test: valgrind or the platform is
// missing.
type exactSkip struct{ msg string }

func (e *exactSkip) Error() string { return e.msg }

var exactSkipOnce sync.Once

// captureExact is Capture with Instructions: in the test's process it runs
// the child and returns its capture; in the child it counts.
func captureExact(t TestingT, fn func(), c captureConfig) (*profile.Profile, string, error) {
	if fn == nil {
		return nil, "", errors.New("perfassert: Capture of a nil function")
	}
	if _, bench := t.(*testing.B); bench {
		return nil, "", errors.New("perfassert: Instructions counts in a test (func TestX(t *testing.T)), which its child process runs again up to the capture; a benchmark's function runs once for every round of b.N, so its captures cannot be told apart")
	}
	nm, ok := t.(namer)
	if !ok || nm.Name() == "" {
		return nil, "", errors.New("perfassert: Instructions needs a test with a name (a *testing.T), whose test binary it runs again under valgrind")
	}
	test := nm.Name()
	index := nextExactIndex(t, test)
	if dir, want, wantTest, ok := exactChildPlan(); ok {
		// Another capture than the one this process counts (of the test,
		// or of a test that runs it, as a parent runs its subtests) gets
		// an empty profile, so that the test goes on to that one.
		p := notCounted(c.name)
		if index != want || (wantTest != "" && wantTest != test) {
			return p, "", nil
		}
		if err := countInChild(fn, dir); err != nil {
			return nil, "", err
		}
		return p, exactCountedHere, nil
	}
	vg, err := valgrindPath()
	if err != nil {
		return nil, "", err
	}
	plan := exactPlan{test: test, index: index, name: c.name}
	start := time.Now()
	p, note, err := runExactChild(t, vg, plan)
	if err != nil {
		return nil, "", err
	}
	exactMu.Lock()
	exactPlans[p] = plan
	exactMu.Unlock()
	summary := exactSummary(p, note, time.Since(start))
	// callgrind's warnings, once per capture, not in every message of
	// every check of it.
	for _, w := range note.warnings {
		summary += "\nwarning: callgrind's dump: " + textfmt.Line(w)
	}
	return p, summary, nil
}

// exactCountedHere is captureExact's summary in the child process that
// counted the capture.
const exactCountedHere = "counted"

// notCounted is what a capture returns in a child process that counts
// another capture of the test: a profile of no instructions.
func notCounted(name string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}, Period: 1}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: name + " (not counted in this child process)", WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Work: 1}}})
	return p
}

// valgrindPath finds valgrind, or says why the exact instrument cannot
// run here.
func valgrindPath() (string, error) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return "", &exactSkip{fmt.Sprintf("perfassert.Instructions: counting instructions needs valgrind on linux/amd64 or linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)}
	}
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		return "", &exactSkip{"perfassert.Instructions: valgrind is not installed, so instructions cannot be counted: install it (Debian, Ubuntu: sudo apt-get install valgrind; in a GitHub workflow, a step `run: sudo apt-get install -y valgrind`) and run the test again"}
	}
	return vg, nil
}

// valgrindVersion is the installed valgrind's version ("valgrind-3.19.0").
var valgrindVersion = sync.OnceValue(func() string {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		return ""
	}
	out, err := exec.Command(vg, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// runExactChild runs the test again under callgrind to count the capture
// plan names, and returns what the child counted.
func runExactChild(t TestingT, vg string, plan exactPlan) (*profile.Profile, exactNote, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, exactNote{}, fmt.Errorf("perfassert: finding the test binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "hotbudget-exact-")
	if err != nil {
		return nil, exactNote{}, fmt.Errorf("perfassert: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
	}
	args := append(exactValgrindArgs(filepath.Join(dir, "callgrind.out")),
		exe, "-test.run="+runPattern(plan.test), "-test.count=1", "-test.v", "-test.timeout=30m")
	cmd := exec.CommandContext(ctx, vg, args...)
	cmd.Env = exactEnv(os.Environ(), fmt.Sprintf("%s|%d|%s", dir, plan.index, plan.test))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	p, note, err := readCounted(dir, plan.name)
	if keepDump != nil && err == nil {
		keepDump(filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", note.last-1)), filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", note.last)))
	}
	if err != nil {
		why := "left no capture"
		if runErr != nil {
			why = runErr.Error()
		}
		return nil, note, fmt.Errorf("perfassert: counting instructions: valgrind running %s again (%s): %s; its output:\n%s",
			plan.test, textfmt.Line(filepath.Base(exe)), why, textfmt.Lines(tail(out.String(), 40)))
	}
	rec, _, _ := meta.Get(p)
	rec.Instrument = instrumentCallgrind + " " + valgrindVersion()
	rec.Depends = exactDepends()
	meta.Set(p, rec)
	return p, note, nil
}

// keepDump, set by tests, sees the child's two counted dumps (runs runs,
// then twice as many) before they are removed.
var keepDump func(runs, twice string)

// readExact reads the capture a child left.
func readExact(path string) (*profile.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return profile.ParseData(data)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[%d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// exactValgrindArgs are valgrind's arguments before the program: callgrind
// with instrumentation off until the child switches it on, writing out
// with every instruction's address, uncompressed.
func exactValgrindArgs(out string) []string {
	return []string{"--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes",
		"--compress-pos=no", "--compress-strings=no", "--callgrind-out-file=" + out}
}

// exactEnv is the child's environment: env without what would make it
// record baselines or check the sampler, with the settings that make
// counts repeat (see Instructions).
func exactEnv(env []string, child string) []string {
	out := make([]string, 0, len(env)+6)
	godebug := "asyncpreemptoff=1"
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case UpdateEnv, childDirEnv, "GOGC", "GOMAXPROCS", exactChildEnv:
			continue
		case "GODEBUG":
			if v != "" {
				godebug = v + "," + godebug
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+godebug, "GOGC=off", "GOMAXPROCS=1",
		"HOTBUDGET_SAMPLER_CHECK=off", exactChildEnv+"="+child)
}

// exactDepends is what the counts depend on besides the code under test:
// the Go version and platform, valgrind's version and the module's
// dependencies (a hash of their paths, versions and sums).
func exactDepends() map[string]string {
	d := map[string]string{
		"go":       runtime.Version(),
		"platform": runtime.GOOS + "/" + runtime.GOARCH,
		"valgrind": valgrindVersion(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOAMD64" || s.Key == "GOARM64" || s.Key == "-race" {
				d[s.Key] = s.Value
			}
		}
		h := sha256.New()
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			fmt.Fprintf(h, "%s %s %s\n", m.Path, m.Version, m.Sum)
		}
		d["dependencies"] = fmt.Sprintf("%d modules, sha256 %s", len(bi.Deps), hex.EncodeToString(h.Sum(nil))[:16])
	}
	return d
}

// exactSummary is Capture's log line for an exact capture.
func exactSummary(p *profile.Profile, note exactNote, took time.Duration) string {
	var total int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			total += s.Value[0]
		}
	}
	rec, _, _ := meta.Get(p)
	settled := "the runtime's type-assertion and type-switch caches full"
	if note.missed > 0 {
		settled = fmt.Sprintf("the runtime's type-assertion and type-switch caches still missing (%s instructions in their miss paths)", textfmt.Count(float64(note.missed)))
	}
	return fmt.Sprintf("%s instructions per iteration, counted in %s (%d less %d, after %s of warm-up, %s) by %s in a child process (%s)",
		textfmt.Count(math.Round(float64(total)/float64(note.runs))), plural(note.runs, "iteration", "iterations"), 2*note.runs, note.runs,
		plural(note.warmed, "run", "runs"), settled, rec.Instrument, textfmt.Duration(took.Round(time.Millisecond)))
}

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
		for _, n := range []int{runs, 2 * runs} {
			runtime.GC()
			countRuns(fn, n)
			seq++
			valgrind.DumpStatsAt(fmt.Sprintf("%s (%d runs)", exactDump, n))
			_, m, err := dumpCost(filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", seq)), isMissFunc)
			if err != nil {
				return err
			}
			missed += m
		}
		if missed == 0 || round >= exactMaxRounds || float64(warmed)*float64(max(one, 1)) >= exactWarmBudget {
			break
		}
		warm *= 4
	}
	note := fmt.Sprintf("%d %d %d %d %d\n", runs, countRunsPC(), seq, warmed, missed)
	return os.WriteFile(filepath.Join(dir, exactCounted), []byte(note), 0o644)
}

// Warm-up of an exact capture (countInChild).
const (
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

// isMissFunc reports whether the instruction at addr is in one of
// exactMissFuncs.
func isMissFunc(addr uint64) bool {
	f := runtime.FuncForPC(uintptr(addr))
	return f != nil && exactMissFuncs[f.Name()]
}

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
			return runtimeFrames(addr + shift)
		})
		f.Close()
		if err != nil {
			return nil, n, fmt.Errorf("perfassert: callgrind's dump %s: %w", dump, err)
		}
		for _, w := range meta.Warnings(p.Comments) {
			if !slices.Contains(n.warnings, w) {
				n.warnings = append(n.warnings, w)
			}
		}
		p.Comments = nil
		phases[i] = trimExact(p)
	}
	// What both phases executed alike cancels: their start, and the
	// work that did not repeat (the runtime's monitor thread, timers).
	p, _, err := valgrind.Difference(phases[1], phases[0])
	if err != nil {
		return nil, n, fmt.Errorf("perfassert: the difference of callgrind's dumps: %w", err)
	}
	p.Comments = meta.MarkExact(nil) // without the loader's format: a capture says what it is
	for _, s := range p.Sample {
		s.Label = map[string][]string{meta.LabelRun: {"1"}}
	}
	meta.Set(p, meta.Record{Name: name, Build: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Race: raceEnabled,
		WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "1", Work: float64(n.runs)}}})
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
// addresses in reports true for (none without in).
func dumpCost(path string, in func(addr uint64) bool) (total, part int64, err error) {
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

// exactAsked reports whether opts hold Instructions.
func exactAsked(opts []CaptureOption) bool {
	var c captureConfig
	for _, o := range opts {
		if o != nil {
			o.applyCapture(&c)
		}
	}
	return c.exact
}

// captureInstructions is Capture with Instructions.
func captureInstructions(t TestingT, fn func(), opts []CaptureOption) *profile.Profile {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	c := captureConfig{name: "capture"}
	for _, o := range opts {
		if o != nil {
			o.applyCapture(&c)
		}
	}
	if c.err != nil {
		t.Errorf("perfassert.Capture: %s", strings.TrimPrefix(c.err.Error(), "perfassert: "))
		return nil
	}
	p, summary, err := captureExact(t, fn, c)
	if _, _, child := exactChild(); child {
		if err == nil && summary == exactCountedHere {
			// Counted and left for the parent: the rest of the test is
			// the parent's.
			if s, ok := t.(interface{ SkipNow() }); ok {
				s.SkipNow()
			}
		}
		return p
	}
	var skip *exactSkip
	if errors.As(err, &skip) {
		msg := skip.msg
		first := false
		exactSkipOnce.Do(func() { first = true })
		if !first {
			msg = "perfassert.Instructions: no valgrind here (see the first test skipped for why)"
		}
		if s, ok := t.(interface{ Skip(...any) }); ok {
			s.Skip(msg)
			return nil
		}
		t.Errorf("%s", msg)
		return nil
	}
	if err != nil {
		t.Errorf("perfassert.Capture: %s", strings.TrimPrefix(err.Error(), "perfassert: "))
		return nil
	}
	logf(t, "perfassert.Capture: %s: %s", c.name, summary)
	return p
}

// MaxSelfInstructions checks that the functions fn selects execute at
// most max instructions themselves (self: as the leaf frame) in p, a
// capture with Instructions or another profile of counted instructions (a
// callgrind file): per iteration with PerIteration, the usual way, since a
// capture counts several runs. It reports a failure to t and returns
// whether the check passed.
//
//	p := perfassert.Capture(t, parse, perfassert.Instructions())
//	perfassert.MaxSelfInstructions(t, p, "example.com/m/parse.normalizeKey", 120_000, perfassert.PerIteration())
func MaxSelfInstructions(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.SelfInstructions, Count: max}, opts)
}

// MaxTotalInstructions is MaxSelfInstructions for total instructions: the
// function's own and those of everything it calls.
func MaxTotalInstructions(t TestingT, p *profile.Profile, fn string, max int64, opts ...Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return report(t, p, fn, limits.Limit{Quantity: limits.TotalInstructions, Count: max}, opts)
}
