package perfassert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	"github.com/hotbudget/hotbudget/internal/meta"
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
// time, so that every process counts the same runs; ten times as many (up
// to 100 million instructions) while a function of the module counts
// differently in N runs than half of 2N, as a loop over a map does, whose
// order is random in every run. A test capturing a 10ms
// function this way takes about 2s.
//
// The child runs with GOMAXPROCS=1 (goroutines fn starts run on the same
// thread and are counted; callgrind's call graph is right only then),
// GOGC=off (the collector's work is not fn's, and its timing is the
// machine's), GODEBUG=asyncpreemptoff=1 (callgrind cannot take Go's
// preemption signal), math/rand's top-level functions seeded with 1 in
// every process (GODEBUG=randautoseed=0,randseednop=1: rand.Seed does
// nothing) and runtime.MemProfileRate = 0. Counted are the
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
	test   string
	index  int
	name   string // the capture's name
	cycles bool   // Cycles: with cache simulation (cycles.go)
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
	plan := exactPlan{test: test, index: index, name: c.name, cycles: c.cycles}
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
	// Kept and written as any capture, so that the test's checks of it
	// pass on its one iteration of nothing.
	_ = keepCapture(p, meta.Facts{Exact: true, HasRecord: true,
		Record: meta.Record{Name: name + " (not counted in this child process)", WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Work: 1}}}})
	return p
}

// valgrindPath finds valgrind, or says why the exact instrument cannot
// run here.
func valgrindPath() (string, error) {
	vg, err := valgrind.Find()
	if err != nil {
		return "", &exactSkip{"perfassert.Instructions: " + err.Error() + ", so instructions cannot be counted here"}
	}
	return vg, nil
}

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
	run := valgrind.Run{Out: filepath.Join(dir, "callgrind.out"), Cache: plan.cache(), Extra: countedAllocArgs()}
	cmd := exec.CommandContext(ctx, vg, run.Args(exe, "-test.run="+runPattern(plan.test), "-test.count=1", "-test.v", "-test.timeout=30m")...)
	cmd.Env = exactEnv(os.Environ(), fmt.Sprintf("%s|%d|%s", dir, plan.index, plan.test))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	p, note, err := readCounted(dir, plan.name)
	var misses map[string]int64
	if err == nil {
		misses, err = attachCountedAllocs(p, dir, note, plan.name)
	}
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
	// The capture's facts, typed from the child's dumps to the checks
	// (readCounted, attachCountedAllocs keep them), its record completed
	// here; its comments are written once, for its saved forms.
	c := capturedOf(p)
	rec := c.rec
	if len(rec.Runs) == 1 {
		// Its functions' type-cache misses, which the runtime decides
		// at random: diff.CompareCounts allows what they can move.
		rec.Runs = slices.Clone(rec.Runs)
		rec.Runs[0].Misses = misses
	}
	rec.Instrument = instrumentCallgrind + " " + valgrind.Version()
	rec.Depends = exactDepends()
	if p, err = plan.estimate(p, &rec, dir, note); err != nil {
		return nil, note, err
	}
	f := c.facts
	f.Record, f.HasRecord, f.RecordErr = rec, true, nil
	if err := keepCapture(p, f); err != nil {
		return nil, note, err
	}
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

// exactEnv is the child's environment: env without what would make it
// record baselines or check the sampler, with the settings that make
// counts repeat (see Instructions).
func exactEnv(env []string, child string) []string {
	return append(valgrind.Env(env, UpdateEnv, childDirEnv, exactChildEnv),
		"HOTBUDGET_SAMPLER_CHECK=off", exactChildEnv+"="+child)
}

// exactDepends is what the counts depend on besides the code under test:
// the Go version and platform, valgrind's version and the module's
// dependencies (a hash of their paths, versions and sums).
func exactDepends() map[string]string {
	d := map[string]string{
		"go":       runtime.Version(),
		"platform": runtime.GOOS + "/" + runtime.GOARCH,
		"valgrind": valgrind.Version(),
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
	rec := capturedOf(p).rec
	settled := "the runtime's type-assertion and type-switch caches full"
	if note.missed > 0 {
		settled = fmt.Sprintf("the runtime's type-assertion and type-switch caches still missing (%s instructions in their miss paths)", textfmt.Count(float64(note.missed)))
	}
	return fmt.Sprintf("%s per iteration, counted in %s (%d less %d, after %s of warm-up, %s) by %s in a child process (%s)",
		perIteration(p, note.runs), plural(note.runs, "iteration", "iterations"), 2*note.runs, note.runs,
		plural(note.warmed, "run", "runs"), settled, rec.Instrument, textfmt.Duration(took.Round(time.Millisecond)))
}

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
