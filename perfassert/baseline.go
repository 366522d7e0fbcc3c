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
	"github.com/hotbudget/hotbudget/loaders"
)

// BaselineAlpha is the false-discovery rate MatchBaseline judges at unless
// its options say otherwise (diff.WithAlpha): a fifth of diff's default, so
// that a baseline compared in every run of a suite fails unchanged code
// rarely (the measurements: docs/baselines.md).
const BaselineAlpha = 0.01

// MatchBaseline asserts that current did not regress against the baseline
// profile stored at path (relative to the test's directory, conventionally
// under testdata/), as NoRegression does; only the module's own functions
// are judged unless opts say otherwise (see CheckRegression).
//
//	p := perfassert.Capture(t, func() { parse(input) })
//	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p)
//
// The baseline is written only when asked: with HOTBUDGET_UPDATE=1 (or the
// test flag -hotbudget.update) MatchBaseline runs the test again in more
// processes of the test binary (ProcessesEnv sets how many), writes every
// process's capture to path atomically, logs that it did, and passes;
// HOTBUDGET_UPDATE=add adds the new processes to the baseline at path
// instead (the newest 48 are kept), so that it learns the machine's states
// at other times. A missing baseline fails with the command that creates
// it. The baseline may be any format the loaders read.
//
// A capture of several processes is compared process against process, at
// a false-discovery rate of BaselineAlpha; a comparison that fails, or
// nearly does, runs the test in two more processes and confirms the
// verdict with them, so that one process's state does not fail the test.
// The whole program's time per iteration is shown but not judged unless
// opts include diff.WithHeadline(true). A capture under the race detector
// is compared with a baseline of its own, path with ".race" before its
// extensions. Allocations per iteration, when both sides hold them, are
// judged exactly (CheckAllocs), and a counted capture (Instructions)
// without statistics.
//
// What a pass and a failure print, and how often it is right on
// third-party modules: docs/baselines.md.
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
	cur := capturedOf(current) // the one read of current's record
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
	allocs := judgeAllocs(t, "MatchBaseline", "base = "+path+", head = current", indexCaptured(base), cur)
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
