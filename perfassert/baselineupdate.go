// Writing golden baselines: when (UpdateEnv, -hotbudget.update), how (WriteBaseline), and once per process.

package perfassert

import (
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
	"github.com/hotbudget/hotbudget/internal/atomicfile"
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

// updateBaseline is MatchBaseline while baselines are written (updating):
// it records current, the capture cur, in more processes (or hands it to
// the process that started this one to record it), adds the recording to
// the baseline at path when asked to (UpdateEnv=add), writes the baseline
// and logs that it did.
func updateBaseline(t TestingT, path string, cur captured) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if recordingChild() {
		// A process MatchBaseline started to record this baseline:
		// the capture goes back to it.
		if err := writeChildCapture(path, cur.p); err != nil {
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
	written := capturedOf(base)
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

// WriteBaseline writes p to path as a gzipped pprof profile, atomically:
// readers see the old file or the new one, never a partial one, and the
// temporary file a killed update leaves beside it (.NAME.PID-RANDOM.tmp) is
// removed by the next write of path. Missing directories are created. A
// replaced baseline keeps its permissions; a new one gets 0666 less the
// umask.
func WriteBaseline(path string, p *profile.Profile) error {
	// A capture of this process is written with its facts as they were
	// kept: its record, marks and allocations (comments.go).
	p, err := savedForm(p)
	if err != nil {
		return fmt.Errorf("writing baseline %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing baseline %s: %w", path, err)
	}
	if err := atomicfile.Write(path, func(f *os.File) error { return p.Write(f) }); err != nil {
		return fmt.Errorf("writing baseline %w", err) // err names path
	}
	return nil
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
