package perfassert

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
)

// UpdateEnv is the environment variable that, set to 1 (or true), makes
// MatchBaseline write baselines, like the -hotbudget.update test flag. Set
// to "add", it records the test as 1 does and adds the recording to the
// baseline it finds, which keeps the newest maxAddedProcesses processes
// (see MatchBaseline).
const UpdateEnv = "HOTBUDGET_UPDATE"

// updateFlag is -hotbudget.update. It is registered only in test binaries
// (testing.Testing), so programs that import perfassert, such as the
// hotbudget CLI, do not grow the flag.
var updateFlag *bool

func init() {
	if testing.Testing() {
		updateFlag = flag.Bool("hotbudget.update", false, "perfassert: write baseline profiles instead of comparing with them (for go test ./..., set "+UpdateEnv+"=1 instead: packages without perfassert reject this flag)")
	}
}

// updating reports whether baselines are to be written.
func updating() bool { return updateMode() != "" }

// updateMode is how baselines are written: "replace" (UpdateEnv=1 or the
// flag), "add" (UpdateEnv=add), or "" (they are compared with).
func updateMode() string {
	if updateFlag != nil && *updateFlag {
		return "replace"
	}
	switch strings.ToLower(os.Getenv(UpdateEnv)) {
	case "1", "true", "yes":
		return "replace"
	case "add":
		return "add"
	}
	return ""
}

// BaselineAlpha is the false-discovery rate MatchBaseline judges at unless
// its options say otherwise (diff.WithAlpha): a fifth of diff's default.
// A golden baseline is compared in every run of a test suite, and a test
// that fails one unchanged run in 25 is a flaky test: measured on a
// third-party parser with baselines of 8 processes, unchanged code failed
// 0.7-4.0% of comparisons at 0.05 and 0-1.0% at 0.01, which caught a 50%
// slower function (9% of the time) in 45-68% of comparisons instead of
// 75-93%.
const BaselineAlpha = 0.01

// MatchBaseline asserts that current did not regress against the baseline
// profile stored at path (relative to the test's directory, conventionally
// under testdata/), as NoRegression does; only the module's own functions
// are judged unless opts say otherwise (see CheckRegression).
//
// A baseline of a capture is recorded in several processes
// (DefaultProcesses; ProcessesEnv sets how many): while baselines are
// written, MatchBaseline runs the calling test again in more processes of
// the test binary, one after the other, and the baseline holds every run
// of each process's capture. The comparison is then process against
// process (meta's runs merged by the process that made them), so that the
// noise it learns is how processes differ, which is more than how the runs
// of one capture differ. A baseline of one process (written so, or before
// baselines held processes) is compared run against run, with a note in
// the test log; baselines written before captures held runs load as one
// run.
//
// A profile captured under the race detector (Capture in `go test -race`)
// is compared with, and written to, path with ".race" before its
// extensions ("testdata/parse.pb.gz" becomes "testdata/parse.race.pb.gz"):
// the detector slows memory accesses far more than arithmetic and leaves a
// third or more of the samples in its C runtime, so each build needs a
// baseline of its own. Commit both when CI runs `go test -race`.
//
// The baseline is written only when asked: run the test with
// HOTBUDGET_UPDATE=1 or the flag -hotbudget.update and MatchBaseline writes
// current, all its runs, to path (gzipped pprof, atomically: a temporary
// file in the same directory renamed over the old one), logs that it did,
// and passes. Use the variable for `go test ./...`: the flag is defined only
// in test binaries that import perfassert, and the others reject it. A
// missing baseline fails with the command that creates it. The baseline may
// be any format the loaders read.
//
// HOTBUDGET_UPDATE=add records the test as 1 does and adds the recording
// to the baseline at path instead of replacing it (the newest 48
// processes are kept): run it again at other times, with the code
// unchanged, and the baseline learns how the machine's states, which last
// minutes to hours, move functions between recordings. The 48 processes
// of three recordings made at different times judged captures made at yet
// another time with under half the false alarms of sixteen from one
// recording, and more power (measured on three third-party modules; see
// maxAddedProcesses). A baseline recorded by another Go version, sampler
// or race setting is not added to: record it anew.
//
// Allocations are judged too, exactly (see CheckAllocs): when both the
// baseline and current hold the allocations Capture records, a function of
// the module whose allocations per iteration grew beyond
// diff.DefaultAllocTolerance fails the assertion, on any machine, without
// statistics, in a report of its own beside the CPU verdicts. A baseline
// written before captures recorded allocations gets no allocation verdict,
// and a note saying so.
//
// Functions are judged at a false-discovery rate of BaselineAlpha (0.01),
// not diff's 0.05, so that an unchanged test fails rarely; pass
// diff.WithAlpha to choose another.
//
// One process is one draw of the machine's state, which moves functions'
// shares as a change of the code does. So when the baseline holds several
// processes and the current capture, compared with it, shows a function
// slower at a false-discovery rate of 0.1 (or fails), MatchBaseline runs
// the test again in two more processes (as it does to record a baseline)
// and judges the three against the baseline: a state passes, a change
// fails. On a third-party JSON parser, with baselines of 16 processes, this
// caught a function made 43-51% slower 70-100% of the time, against 16-100%
// from one process, with no false alarm in 750 unchanged comparisons;
// unchanged code ran the extra processes in 0-11% of them.
//
// A machine can run a whole process in another state: on that parser, a
// third of the processes of three recordings out of five took 1.4-2.1ms
// of CPU time an iteration instead of 1.05-1.15ms, and one of its
// functions 5-7 times its share. Against a baseline recorded without such
// a process, 6 of 7 of them failed. When a failed comparison's current
// processes all ran 25% slower (or faster) per iteration than every
// process of the baseline, by more than twice what the functions judged
// regressed account for, the failure says so, and that recording the
// baseline again on this machine is the fix if the code did not change.
//
// The whole program's time per iteration (the report's headline) is shown
// but not judged: a baseline was recorded on another day, often on another
// machine, and its time per iteration measures the hardware and its load
// as much as the code. Functions are judged as shares of the profile,
// which do not depend on them. Pass diff.WithHeadline() to judge it too
// when baselines are recorded on the machine that checks them.
func MatchBaseline(t TestingT, path string, current *profile.Profile, opts ...diff.Option) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if _, _, ok := exactChild(); ok {
		return true // a child process counting a capture: judged by its parent
	}
	if current == nil {
		t.Errorf("perfassert.MatchBaseline(%s): nil profile", path)
		return false
	}
	cur := readRecorded(current) // the one read of current's record
	race, _ := raceOf(cur.rec)
	if race {
		path = racePath(path)
	}
	if cur.isExact() {
		return matchExact(t, path, cur, race)
	}
	if updating() {
		if recordingChild() {
			// A process MatchBaseline started to record this baseline:
			// the capture goes back to it.
			if err := writeChildCapture(path, current); err != nil {
				t.Errorf("perfassert.MatchBaseline: %v", err)
				return false
			}
			return true
		}
		// go test -count=N runs the test N times in this process: the
		// baseline is recorded the first time only, and the others say so.
		if again := recordedHere(path); again != "" {
			msg := fmt.Sprintf("perfassert.MatchBaseline: baseline %s was recorded by this test process already (%s); kept, not recorded again: run the test without %s to compare with it", path, again, UpdateEnv)
			if _, ok := t.(logger); ok {
				logf(t, "%s", msg)
			} else {
				fmt.Fprintln(os.Stderr, msg)
			}
			return true
		}
		// Adding: the baseline is read and checked before the test runs
		// again in more processes, so that one that cannot be added to
		// fails at once.
		var held *profile.Profile
		adding := updateMode() == "add"
		if adding {
			var err error
			if held, err = baselineToAdd(path, cur.rec); err != nil {
				t.Errorf("perfassert.MatchBaseline: %v", err)
				return false
			}
		}
		base, note, err := recordProcesses(t, path, cur)
		if err == nil && adding {
			var added string
			base, added, err = addRecording(path, held, base)
			note = strings.Join(slices.DeleteFunc([]string{note, added}, func(s string) bool { return s == "" }), "; ")
		}
		if err != nil {
			t.Errorf("perfassert.MatchBaseline: %v", err)
			return false
		}
		if err := WriteBaseline(path, base); err != nil {
			t.Errorf("perfassert.MatchBaseline: %v", err)
			return false
		}
		markRecorded(path)
		msg := fmt.Sprintf("perfassert.MatchBaseline: updated baseline %s (%d samples", path, countSamples(base))
		written := readRecorded(base)
		if n := written.runs(); n > 1 {
			msg += fmt.Sprintf(" in %d runs", n)
		}
		if n := written.rec.Processes(); n > 1 {
			msg += fmt.Sprintf(" of %d processes", n)
		}
		msg += ")"
		if note != "" {
			msg += "; " + note
		}
		if _, ok := t.(logger); ok {
			logf(t, "%s", msg)
		} else {
			fmt.Fprintln(os.Stderr, msg)
		}
		return true
	}
	base, err := loaders.LoadIndex(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("perfassert.MatchBaseline: no baseline at %s; create it by running, in the module root:\n    %s\nor, for every baseline of the module:\n    %s=1 go test%s ./...", path, updateCommand(t, race), UpdateEnv, map[bool]string{true: " -race"}[race])
			return false
		}
		t.Errorf("perfassert.MatchBaseline: reading baseline: %v", err)
		return false
	}
	curIndex, err := cur.index()
	if err != nil {
		t.Errorf("perfassert.MatchBaseline: current: %v", err)
		return false
	}
	c := baselineSides(t, path, base, curIndex)
	opts = append([]diff.Option{diff.WithoutHeadline(), diff.WithAlpha(BaselineAlpha)}, opts...)
	cpu := func() bool {
		if h, ok := t.(helper); ok {
			h.Helper()
		}
		rep, err := checkIndexes(c.base, c.head, opts...)
		if err != nil {
			failRegression(t, "MatchBaseline", c.name, err)
			return false
		}
		if more, why := confirmable(t, c, cur.rec, rep, opts); more {
			if c, err = confirmHead(t, path, c, why); err != nil {
				t.Errorf("perfassert.MatchBaseline: %v", err)
				return false
			}
			if rep, err = checkIndexes(c.base, c.head, opts...); err != nil {
				failRegression(t, "MatchBaseline", c.name, err)
				return false
			}
		}
		if note := thinBaseline(path, rep); note != "" {
			logf(t, "perfassert.MatchBaseline: %s", note)
		}
		if note := otherState(c, rep); note != "" {
			// In the failure itself: a TestingT need not log.
			rep.Warnings = append(rep.Warnings, note)
		}
		if note := busyMachine(c, rep); note != "" {
			rep.Warnings = append(rep.Warnings, note)
		}
		return reportReport(t, "MatchBaseline", c.name, "function", rep)
	}()
	allocs := judgeAllocs(t, "MatchBaseline", "base = "+path+", head = current", (*indexload.Index)(base).Index().Comments, current.Comments)
	return cpu && allocs
}

// baselineSides names what MatchBaseline compares: the baseline and the
// current capture, which the comparison splits. A baseline recorded in
// several processes is compared process against process (diff.Compare
// merges each side's runs by the process that made them), so that the
// noise the comparison learns is how processes vary, which the current
// capture, one more process, varies by too. A baseline of one process is
// compared run against run, with a note when a new recording would hold
// several.
func baselineSides(t TestingT, path string, base, current *analysis.Index) compared {
	c := compared{base: []*analysis.Index{base}, head: []*analysis.Index{current}}
	br, cr := recordOf(base), recordOf(current)
	if n := br.Processes(); n > 1 {
		c.byProcess, c.baseProcesses = true, n
		c.name = fmt.Sprintf("base = %s (%d processes), head = current (%s)", path, n, plural(max(1, cr.Processes()), "process", "processes"))
		return c
	}
	if cr.Sampler != "" && multiProcess() {
		n, _ := baselineProcesses()
		logf(t, "perfassert.MatchBaseline: baseline %s holds the capture of one process, whose runs vary less than processes do: functions may be judged changed that only moved with the process; record it again (%s=1) to record it in %d processes", path, UpdateEnv, n)
	}
	c.name = "base = " + path + runsNote(len(br.Runs)) + ", head = current" + runsNote(len(cr.Runs))
	return c
}

// compared is what MatchBaseline compares: the baseline's and the current
// capture's indexes (the current one's processes after confirming), and
// the name of the two sides.
type compared struct {
	base, head    []*analysis.Index
	name          string
	byProcess     bool // the baseline holds several processes: compared by process
	baseProcesses int  // how many, when byProcess
}

// runs is how many runs r's profile holds, as meta.Split would cut it: 1
// when its runs cannot be told.
func (r recorded) runs() int {
	if r.facts.RecordErr != nil {
		return 1
	}
	groups, err := r.facts.Record.GroupRuns(len(r.p.Sample), func(i int) []string { return r.p.Sample[i].Label[meta.LabelRun] })
	if err != nil || groups == nil {
		return 1
	}
	return len(groups)
}

// WriteBaseline writes p to path as a gzipped pprof profile, atomically:
// readers see the old file or the new one, never a partial one, and the
// temporary file a killed update leaves beside it (.NAME.PID-RANDOM.tmp) is
// removed by the next write of path. Missing directories are created. A
// replaced baseline keeps its permissions; a new one gets 0666 less the
// umask.
func WriteBaseline(path string, p *profile.Profile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing baseline %s: %w", path, err)
	}
	if err := atomicfile.Write(path, func(f *os.File) error { return p.Write(f) }); err != nil {
		return fmt.Errorf("writing baseline %w", err) // err names path
	}
	return nil
}

// racePath inserts ".race" before the extensions of path's file name:
// "testdata/parse.pb.gz" becomes "testdata/parse.race.pb.gz".
func racePath(path string) string {
	dir, file := filepath.Split(path)
	i := strings.Index(strings.TrimLeft(file, "."), ".")
	if i < 0 {
		return path + ".race"
	}
	i += len(file) - len(strings.TrimLeft(file, "."))
	return dir + file[:i] + ".race" + file[i:]
}

// updateCommand is the go test command that writes the calling test's
// baselines, run from the module root; with race, under the race detector.
func updateCommand(t TestingT, race bool) string {
	run := ""
	if n, ok := t.(namer); ok && n.Name() != "" {
		run = " -run '" + runPattern(n.Name()) + "'"
	}
	if race {
		run = " -race" + run
	}
	return UpdateEnv + "=1 go test" + run + " " + packageDir()
}

// packageDir is the current directory (the test's package) relative to the
// enclosing module root, as a go package pattern ("./perfassert"); "." when
// it cannot be told.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

// profiles is "1 baseline profile" or "5 baseline profiles".
func profiles(n int, kind string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s profile", kind)
	}
	return fmt.Sprintf("%d %s profiles", n, kind)
}

// recordedPaths are the baselines this process recorded, by absolute path,
// with when.
var recordedPaths sync.Map // string -> time.Time

func baselineKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// markRecorded notes that this process recorded the baseline at path.
func markRecorded(path string) { recordedPaths.Store(baselineKey(path), time.Now()) }

// recordedHere says when this process recorded the baseline at path
// already ("" if it did not): a test run again by go test -count=N.
func recordedHere(path string) string {
	v, ok := recordedPaths.Load(baselineKey(path))
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s ago; go test -count=N runs a test N times", time.Since(v.(time.Time)).Round(time.Millisecond))
}
