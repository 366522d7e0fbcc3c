// MatchBaseline: comparing a test's capture with the golden baseline profile stored in testdata.

package perfassert

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/loaders"
)

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
// (defaultProcesses; ProcessesEnv sets how many): while baselines are
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
// which do not depend on them. Pass diff.WithHeadline(true) to judge it too
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
		return updateBaseline(t, path, cur)
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
	opts = append([]diff.Option{diff.WithHeadline(false), diff.WithAlpha(BaselineAlpha)}, opts...)
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
