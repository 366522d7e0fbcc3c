// Running the test again in more processes of the test binary (to record a baseline or confirm a comparison), and adding a recording to a baseline (UpdateEnv=add).

package perfassert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// Baselines recorded in several processes (issue 15).
//
// A function's share of a capture varies more between processes than
// between the runs of one capture: each process has its own memory layout,
// cache state and moment of the machine's load (measured on a third-party
// JSON parser: a 3% function's share ranged 2.1-4.0% across unchanged
// captures of separate processes while the runs within each agreed). A
// baseline of one process cannot show that spread, so a comparison that
// learns its noise from runs within processes calls it change. While
// baselines are written, MatchBaseline therefore runs the calling test
// again in more processes of the test binary, each of which captures as
// the first did and hands its capture back; the baseline holds them all,
// each run numbered by its process (meta.Run.Process). Comparisons with
// such a baseline take one process as the unit that varies, on both sides.

// ProcessesEnv is the environment variable that sets how many processes
// MatchBaseline records a baseline in (default defaultProcesses; 1 records
// the calling process's capture alone, as baselines were before).
const ProcessesEnv = "HOTBUDGET_BASELINE_PROCESSES"

// defaultProcesses is how many processes a baseline is recorded in by
// default: the test's own and fifteen more runs of its test binary.
//
// Measured offline on five recordings of a third-party parser
// (TestMeasureProcessBaselines, 150 seeded baselines each, false-discovery
// rate 0.01, confirming as MatchBaseline does): a function made 40-50%
// slower was named alone in 96/100/95/97/96% of comparisons with baselines
// of 16 processes (confirming at 0.1: 90/100/70/97/96%), 81/100/57/100/82%
// with 8 (confirming at 0.25), while 16 sent fewer unchanged comparisons
// to the extra processes at 0.1 (0-11%) than 8 did at 0.25 (7-16%), and
// unchanged code failed 0-1.3% either way. The cost is in recording: an
// update runs each test 16 times, about 20s a test (the extra processes
// skip the allocation phase).
const defaultProcesses = 16

// maxProcesses bounds ProcessesEnv.
const maxProcesses = 50

// childDirEnv names the directory where a process started to record a
// baseline leaves its captures, one file per baseline path; set only in
// those processes.
const childDirEnv = "HOTBUDGET_BASELINE_CHILD_DIR"

// baselineProcesses is how many processes a baseline is recorded in: the
// ProcessesEnv setting, defaultProcesses without one, and an error naming
// the variable for a value that is not a count.
func baselineProcesses() (int, error) {
	v := strings.TrimSpace(os.Getenv(ProcessesEnv))
	if v == "" {
		return defaultProcesses, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxProcesses {
		return 0, fmt.Errorf("%s=%q: want a count of processes from 1 to %d", ProcessesEnv, v, maxProcesses)
	}
	return n, nil
}

// recordingChild reports whether this process was started by MatchBaseline
// to capture for a baseline.
func recordingChild() bool { return os.Getenv(childDirEnv) != "" }

// multiProcess reports whether baselines written by this process are
// recorded in several processes: in a test binary, with more than one
// process asked. Capture then records each process at the size of a
// comparison's capture, not recordScale times it: the processes together
// make the baseline larger.
func multiProcess() bool {
	if recordingChild() {
		return true
	}
	n, err := baselineProcesses()
	return testing.Testing() && err == nil && n > 1
}

// childFile is where a child process leaves its capture for the baseline
// at path.
func childFile(dir, path string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(path)))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".pb.gz")
}

// children are the extra processes of each test, run once per test
// however many baselines it writes; spawning serialises them, so that the
// processes of parallel tests do not share the machine while they capture.
var (
	childrenMu sync.Mutex
	spawning   sync.Mutex
	children   = map[string]*childRuns{}
)

type childRuns struct {
	done chan struct{} // closed when the processes have run
	dir  string
	errs []error // one per process that failed to run
	outs []string
}

// recordProcesses returns the baseline for path made of current and the
// captures of n-1 more processes running the test again, when current is
// a capture of this process that can be recorded that way; otherwise
// current alone, with a note saying why (empty when nothing was asked).
func recordProcesses(t TestingT, path string, current captured) (*profile.Profile, string, error) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	n, err := baselineProcesses()
	if err != nil {
		return nil, "", err
	}
	if n <= 1 {
		return current.p, "", nil
	}
	rec := current.rec // zero when current holds no record: not a capture
	if rec.Sampler == "" || rec.Processes() != 1 || len(rec.Runs) == 0 {
		return current.p, "", nil // not a capture of this process: written as given
	}
	nm, ok := t.(namer)
	if !ok || nm.Name() == "" || !testing.Testing() {
		return current.p, fmt.Sprintf("recorded in this process alone (%s asks %d): only a test with a name can be run again in other processes", ProcessesEnv, n), nil
	}
	name := nm.Name()
	c := runChildren(t, name, n-1, fmt.Sprintf("recording baselines of %s in %d processes: running it %d more times (%s sets how many)", name, n, n-1, ProcessesEnv))
	ps, failed := c.captures(path)
	first, err := savedForm(current.p) // its comments, beside the record, are the baseline's
	if err != nil {
		return nil, "", err
	}
	ps = append([]*profile.Profile{first}, ps...)
	if len(failed) > 0 {
		// The processes' output is the test's own, printed again in this
		// test's failure: escaped like any text a test log shows.
		return nil, "", fmt.Errorf("recording baseline %s in %d processes: %d of the %d extra runs of %s failed, so nothing was written:\n%s",
			path, n, len(failed), n-1, name, textfmt.Lines(strings.Join(failed, "\n")))
	}
	merged, err := meta.MergeProcesses(ps)
	if err != nil {
		return nil, "", fmt.Errorf("recording baseline %s: %w", path, err)
	}
	return merged, "", nil
}

// runChildren runs the test called name k more times in processes of the
// test binary that capture as this one did and hand their captures back
// (once per test, however many of its MatchBaseline calls ask: they share
// the processes, which are gone with the test), logging why first.
func runChildren(t TestingT, name string, k int, why string) *childRuns {
	childrenMu.Lock()
	c, running := children[name]
	if !running {
		c = &childRuns{done: make(chan struct{})}
		children[name] = c
	}
	childrenMu.Unlock()
	if running {
		<-c.done // another MatchBaseline of the same test started them
		return c
	}
	logf(t, "perfassert.MatchBaseline: %s", why)
	c.dir, c.errs, c.outs = spawnChildren(name, k)
	close(c.done)
	if cl, ok := t.(interface{ Cleanup(func()) }); ok {
		// The captures are read by the test's MatchBaseline calls:
		// gone with the test.
		cl.Cleanup(func() {
			os.RemoveAll(c.dir)
			childrenMu.Lock()
			delete(children, name)
			childrenMu.Unlock()
		})
	}
	return c
}

// captures are the children's captures for the baseline at path, and a
// line for each child that failed or left none.
func (c *childRuns) captures(path string) (ps []*profile.Profile, failed []string) {
	for i := range c.errs {
		file := childFile(filepath.Join(c.dir, strconv.Itoa(i+1)), path)
		p, lerr := loaders.Load(file)
		if lerr != nil {
			why := lerr.Error()
			if errors.Is(lerr, os.ErrNotExist) {
				why = "it wrote no capture for this baseline"
			}
			if c.errs[i] != nil {
				why += " (" + c.errs[i].Error() + ")"
			}
			failed = append(failed, fmt.Sprintf("process %d: %s%s", i+2, why, lastOutput(c.outs[i])))
			continue
		}
		ps = append(ps, p)
	}
	return ps, failed
}

// lastOutput is the end of a child's output, indented, for an error.
func lastOutput(out string) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return ""
	}
	lines := strings.Split(out, "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

// spawnChildren runs the test called name k times in processes of this
// test binary, one after the other, each leaving its captures in a
// directory of its own under the returned one. errs and outs are each
// process's failure (nil when it passed) and output.
func spawnChildren(name string, k int) (dir string, errs []error, outs []string) {
	spawning.Lock()
	defer spawning.Unlock()
	errs, outs = make([]error, k), make([]string, k)
	dir, err := os.MkdirTemp("", "hotbudget-baseline-")
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return dir, errs, outs
	}
	exe, err := os.Executable()
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("finding the test binary: %w", err)
		}
		return dir, errs, outs
	}
	for i := range k {
		sub := filepath.Join(dir, strconv.Itoa(i+1))
		if err := os.Mkdir(sub, 0o755); err != nil {
			errs[i] = err
			continue
		}
		cmd := exec.Command(exe, "-test.run="+runPattern(name), "-test.count=1", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), childDirEnv+"="+sub, UpdateEnv+"=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			errs[i] = fmt.Errorf("%s after %s: %w", filepath.Base(exe), textfmt.Duration(time.Since(start).Round(time.Millisecond)), err)
		}
		outs[i] = out.String()
	}
	return dir, errs, outs
}

// runPattern is the -test.run pattern that selects exactly the test (or
// subtest) called name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// writeChildCapture is MatchBaseline in a process started to record a
// baseline: it leaves current where the process that started it reads it.
func writeChildCapture(path string, current *profile.Profile) error {
	dir := os.Getenv(childDirEnv)
	return WriteBaseline(childFile(dir, path), current)
}

// maxAddedProcesses is the most processes a baseline keeps when recordings
// are added to it (UpdateEnv=add): three recordings at the default sixteen.
// A baseline recorded at one time knows the machine's state of that time;
// functions then move between recordings by states that last minutes to
// hours. Against captures made at yet another time, on three third-party
// modules (buger/jsonparser, pelletier/go-toml/v2, Masterminds/semver),
// unchanged code failed 2.8%, 1.8% and 2.8% of comparisons with 16
// processes of one recording, 1.9%, 0% and 0.8% with the 48 of three, and
// a function made 37-49% slower was named alone in 69%, 51% and 93%, then
// 76%, 77% and 98% (16 drawn from the three: 0.8%, 0.7%, 0%; 74%, 55%,
// 97%).
const maxAddedProcesses = 48

// baselineToAdd is the baseline at path that current's recording is to be
// added to (UpdateEnv=add), nil when there is none. One recorded by another
// build, sampler or race setting than current (the record of the capture)
// cannot be added to, since its processes would not compare with the new
// ones.
func baselineToAdd(path string, current meta.Record) (*profile.Profile, error) {
	old, err := loaders.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adding to baseline %s: %w", path, err)
	}
	or, ok := meta.Known(old)
	nr := current
	anew := fmt.Sprintf("record it anew (%s=1)", UpdateEnv)
	if !ok || len(or.Runs) == 0 {
		return nil, fmt.Errorf("adding to baseline %s: it records no runs (it was written before baselines held them): %s", path, anew)
	}
	describe := func(r meta.Record) string {
		s := r.Build
		if r.Race {
			s += " with the race detector"
		}
		if r.Sampler != "" {
			s += ", sampled by " + r.Sampler
		}
		return s
	}
	if describe(or) != describe(nr) {
		return nil, fmt.Errorf("adding to baseline %s: it was recorded by %s, this test by %s, whose processes do not compare with its: %s",
			path, describe(or), describe(nr), anew)
	}
	return old, nil
}

// addRecording adds recorded, the processes this update recorded, to old,
// the baseline at path (baselineToAdd; nil: there was none): the new
// processes first (their record's build, sampler and allocations are the
// baseline's from now on), then old's, the oldest dropped beyond
// maxAddedProcesses. It says what it did in a note.
func addRecording(path string, old, recorded *profile.Profile) (*profile.Profile, string, error) {
	if old == nil {
		return recorded, "there was no baseline to add to", nil
	}
	oldParts, err := meta.SplitProcesses(old)
	if err != nil {
		return nil, "", fmt.Errorf("adding to baseline %s: %w", path, err)
	}
	newParts, err := meta.SplitProcesses(recorded)
	if err != nil {
		return nil, "", fmt.Errorf("adding to baseline %s: %w", path, err)
	}
	keep := max(0, min(len(oldParts), maxAddedProcesses-len(newParts)))
	merged, err := meta.MergeProcesses(append(newParts, oldParts[:keep]...))
	if err != nil {
		return nil, "", fmt.Errorf("adding to baseline %s: %w", path, err)
	}
	note := fmt.Sprintf("added %s to the %s it held", plural(len(newParts), "process", "processes"), plural(len(oldParts), "process", "processes"))
	if keep < len(oldParts) {
		note += fmt.Sprintf(", of which the oldest %d were dropped (a baseline keeps %d)", len(oldParts)-keep, maxAddedProcesses)
	}
	return merged, note, nil
}
