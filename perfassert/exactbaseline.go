// MatchBaseline for captures of exact counts (Instructions): recording them in processes and judging them without statistics.

package perfassert

import (
	"errors"
	"fmt"
	"go/version"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// defaultExactProcesses is how many processes a baseline of exact counts
// (Instructions) is recorded in by default: the test's own capture and four
// more child processes under callgrind. Counts repeat across processes
// except where work depends on the per-process hash seed (map lookups,
// hashing), whose spread five processes show; ProcessesEnv sets another
// number.
const defaultExactProcesses = 5

// exactProcesses is how many processes an exact baseline is recorded in.
func exactProcesses() (int, error) {
	if strings.TrimSpace(os.Getenv(ProcessesEnv)) == "" {
		return defaultExactProcesses, nil
	}
	return baselineProcesses()
}

// matchExact is MatchBaseline for a capture of exact counts: it records the
// baseline in several processes, or judges the capture against it without
// statistics (diff.CompareCounts).
func matchExact(t TestingT, path string, current captured, race bool) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if updating() {
		if again := recordedHere(path); again != "" {
			logf(t, "perfassert.MatchBaseline: baseline %s was recorded by this test process already (%s); kept, not recorded again: run the test without %s to compare with it", path, again, UpdateEnv)
			return true
		}
		base, note, err := recordExact(t, current.p)
		if err == nil {
			err = WriteBaseline(path, base)
		}
		if err != nil {
			t.Errorf("perfassert.MatchBaseline: %v", err)
			return false
		}
		markRecorded(path)
		rec, _ := meta.Known(base)
		msg := fmt.Sprintf("perfassert.MatchBaseline: updated baseline %s (exact counts of %s)", path, plural(max(1, rec.Processes()), "process", "processes"))
		if note != "" {
			msg += "; " + note
		}
		logf(t, "%s", msg)
		return true
	}
	loaded, err := loaders.Load(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("perfassert.MatchBaseline: no baseline at %s; create it by running, in the module root:\n    %s", path, exactUpdateCommand(t, race))
			return false
		}
		t.Errorf("perfassert.MatchBaseline: reading baseline: %v", err)
		return false
	}
	base := capturedOf(loaded) // the one read of the baseline's record
	br, cr := base.rec, current.rec
	if why := exactMismatch(br, cr); why != "" {
		t.Errorf("perfassert.MatchBaseline: baseline %s %s; record it again:\n    %s", path, why, exactUpdateCommand(t, race))
		return false
	}
	if br.Depends["valgrind"] != cr.Depends["valgrind"] {
		logf(t, "perfassert.MatchBaseline: baseline %s was counted by %s, this capture by %s: compared all the same (the program's instructions do not depend on valgrind's version)", path, textfmt.Line(orNone(br.Depends["valgrind"])), textfmt.Line(orNone(cr.Depends["valgrind"])))
	}
	return judgeCounts(t, "MatchBaseline", "base = "+path+", head = current", base, current)
}

// exactUpdateCommand is updateCommand for a baseline of counts, run by
// the Go toolchain that counted the capture (GOTOOLCHAIN=go1.26.8): counts
// are one Go version's, and the command may be run where another Go is
// the default, on a laptop or for another Go release of a CI matrix. A
// toolchain that GOTOOLCHAIN cannot name (a development build, a
// GOEXPERIMENT) is left to the go command.
func exactUpdateCommand(t TestingT, race bool) string {
	cmd := updateCommand(t, race)
	if v := runtime.Version(); version.IsValid(v) {
		cmd = "GOTOOLCHAIN=" + v + " " + cmd
	}
	return cmd
}

// judgeCounts judges the exact counts of current against base, the
// module's functions (diff.CompareCounts), and reports to t as check. A
// failure is confirmed before it is reported: a current capture this
// process made with Instructions is counted again in a fresh child
// process, and the check fails only when a function fails both
// judgements.
func judgeCounts(t TestingT, check, sides string, base, current captured) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	// The exact allocations of the same captures, for the counts to
	// forgive the work that allocating less paid for (CountReport.Trade);
	// judged on their own below.
	var exact *diff.AllocReport
	if ba, ca, err := allocProfiles(base, current); err == nil && ba != nil && ca != nil && !underRace(ba) && !underRace(ca) {
		exact, _, _ = compareAllocs(ba, ca)
	}
	counts := judgeInstructions(t, check, sides, base.p, current.p, exact)
	// The allocations the child counted, one by one: exact, judged
	// without tolerance and without confirmation.
	allocs := judgeAllocs(t, check, sides, base, current)
	return counts && allocs
}

// judgeInstructions is judgeCounts for the counts of instructions.
func judgeInstructions(t TestingT, check, sides string, base, current *profile.Profile, allocs *diff.AllocReport) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	rep, text, err := compareCountsText(base, current, allocs)
	if err != nil {
		t.Errorf("perfassert.%s: %s: %v", check, sides, err)
		return false
	}
	if !rep.Failed() {
		logf(t, "perfassert.%s: %s: %s", check, sides, text)
		return true
	}
	b2, c2, how, err := countAgain(t, base, current)
	if err != nil {
		t.Errorf("perfassert.%s: %s: %s\n(confirming it in a fresh process failed: %v)", check, sides, text, err)
		return false
	}
	if b2 == nil {
		t.Errorf("perfassert.%s: %s: %s", check, sides, text)
		return false
	}
	rep2, text2, err := compareCountsText(b2, c2, allocs)
	if err != nil {
		t.Errorf("perfassert.%s: %s: %v", check, sides, err)
		return false
	}
	both := failedBoth(rep, rep2)
	if len(both) == 0 {
		logf(t, "perfassert.%s: %s: passed: the first count failed, and %s did not repeat it (the runtime's per-process state, not the code):\nfirst: %s\nagain: %s", check, sides, how, text, text2)
		return true
	}
	t.Errorf("perfassert.%s: %s: %s\n(confirmed: %s, counted again %s, failed both times)", check, sides, text2, textfmt.Line(strings.Join(both, ", ")), how)
	return false
}

// compareCountsText is diff.CompareCounts of the module's functions and
// its report in text.
func compareCountsText(base, current *profile.Profile, allocs *diff.AllocReport) (*diff.CountReport, string, error) {
	// countRuns, the loop around the function under test, is perfassert's
	// own and never judged: its few instructions a run land on it or on
	// the function it calls as the instrumentation's start falls (0 or 9
	// an iteration in hotbudget's own tests under go1.27.3).
	judge := func(name string) bool { return name != countRunsName }
	re := moduleFuncs()
	if re != nil {
		judge = func(name string) bool { return name != countRunsName && re.MatchString(name) }
	}
	rep, err := diff.CompareCounts(base, current, judge)
	if err != nil {
		return nil, "", err
	}
	rep.Trade(allocs)
	rep.NoteInlined(inlined.into())
	if rep.Judged == 0 {
		// Nothing judged is not a pass: a filter that matches none of the
		// names the toolchain wrote would pass every change.
		what := "the comparison"
		var mods []string
		if re != nil {
			what, mods = "the functions of "+mainModule()+" (the module under test)", []string{mainModule()}
		}
		return nil, "", errors.New(modname.Unmatched(what, mods, "", countNames(base, current)))
	}
	var b strings.Builder
	if err := rep.Write(&b, "text"); err != nil {
		return nil, "", err
	}
	judged := plural(rep.Judged, "function", "functions")
	if re != nil {
		judged += " of " + mainModule()
	}
	// How many were judged, at the end of the verdict's line.
	first, rest, _ := strings.Cut(strings.TrimRight(b.String(), "\n"), "\n")
	text := fmt.Sprintf("%s (%s judged)", first, judged)
	if rest != "" {
		text += "\n" + rest
	}
	return rep, cyclesBeside(rep, text, base, current), nil
}

// failedBoth are the functions that regressed (or are new) in both
// reports.
func failedBoth(a, b *diff.CountReport) []string {
	failed := map[string]bool{}
	for _, row := range a.Rows {
		if row.Verdict == diff.Regressed || row.Verdict == diff.New {
			failed[row.Name] = true
		}
	}
	var both []string
	for _, row := range b.Rows {
		if failed[row.Name] && (row.Verdict == diff.Regressed || row.Verdict == diff.New) {
			both = append(both, row.Name)
		}
	}
	slices.Sort(both)
	return both
}

// countAgain counts current again in a fresh child process when this
// process captured it with Instructions, and says so; nil profiles when
// it did not (nothing to count again). The base stays as it is: a
// baseline's processes are its own, and a capture used as a base may
// have been made under settings the test has changed since.
func countAgain(t TestingT, base, current *profile.Profile) (b2, c2 *profile.Profile, how string, err error) {
	if _, _, child := exactChild(); child {
		return nil, nil, "", nil
	}
	exactMu.Lock()
	plan, ok := exactPlans[current]
	exactMu.Unlock()
	if !ok {
		return nil, nil, "", nil
	}
	vg, err := valgrindPath()
	if err != nil {
		return nil, nil, "", err
	}
	if c2, _, err = runExactChild(t, vg, plan); err != nil {
		return nil, nil, "", err
	}
	return base, c2, "the current capture in a fresh process", nil
}

// countNames is the functions of the counts of both sides, each weighed
// by its count: what a filter that judged none of them is shown.
func countNames(ps ...*profile.Profile) []suggest.Candidate {
	w := map[string]int64{}
	for _, p := range ps {
		for _, s := range p.Sample {
			if len(s.Value) > 0 && len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
				w[s.Location[0].Line[0].Function.Name] += s.Value[0]
			}
		}
	}
	var out []suggest.Candidate
	for _, n := range slices.Sorted(maps.Keys(w)) {
		out = append(out, suggest.Candidate{Name: n, Weight: w[n]})
	}
	return out
}

// noted are the dependencies of counts whose difference is said, not
// refused: valgrind's version changes how long counting takes, not what
// the program executes (the CPU it presents, which selects the runtime's
// code paths, is the same AVX2 machine in every version without AVX-512
// support, which is all of them), and a baseline committed from a laptop
// must hold on a CI runner with another distribution's valgrind.
var noted = map[string]bool{"valgrind": true}

// exactMismatch says why a baseline recorded as br cannot judge a capture
// recorded as cr, "" when it can: the baseline is not exact, or what the
// counts depend on differs (the Go version, platform, GOAMD64 level, race
// detector or the module's dependencies).
func exactMismatch(br, cr meta.Record) string {
	if br.Instrument == "" {
		return "holds sampled time, and the current capture counts instructions (perfassert.Instructions)"
	}
	if why := cyclesMismatch(br, cr); why != "" {
		return why
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(cr.Depends)) {
		if noted[k] {
			continue
		}
		if br.Depends[k] != cr.Depends[k] {
			diffs = append(diffs, fmt.Sprintf("%s %s here, %s in the baseline", k, textfmt.Line(cr.Depends[k]), textfmt.Line(orNone(br.Depends[k]))))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	why := "counted another program: " + strings.Join(diffs, "; ")
	if b, c := version.Lang(br.Depends["go"]), version.Lang(cr.Depends["go"]); b != c && b != "" && c != "" {
		// Recording it again under this release would only move the
		// refusal to the other one.
		why += " (counts are one Go version's: to judge several Go releases, as a CI matrix does, keep a baseline per release, e.g. in testdata/" + c + "/)"
	}
	return why
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// recordExact returns the baseline made of current and more processes
// counting the same capture, and a note when it holds current alone.
func recordExact(t TestingT, current *profile.Profile) (*profile.Profile, string, error) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	n, err := exactProcesses()
	if err != nil {
		return nil, "", err
	}
	exactMu.Lock()
	plan, ok := exactPlans[current]
	exactMu.Unlock()
	if n <= 1 {
		return current, "", nil
	}
	if !ok {
		return current, "recorded in one process: the capture was not made by Instructions in this process", nil
	}
	vg, err := valgrindPath()
	if err != nil {
		return nil, "", err
	}
	logf(t, "perfassert.MatchBaseline: recording exact counts of %s in %d processes: %d more under callgrind (%s sets how many)", plan.test, n, n-1, ProcessesEnv)
	first, err := savedForm(current) // its comments, beside the record, are the baseline's
	if err != nil {
		return nil, "", err
	}
	ps := []*profile.Profile{first}
	for range n - 1 {
		p, _, err := runExactChild(t, vg, plan)
		if err != nil {
			return nil, "", err
		}
		ps = append(ps, p)
	}
	merged, err := meta.MergeProcesses(ps)
	if err != nil {
		return nil, "", fmt.Errorf("recording the baseline: %w", err)
	}
	return merged, "", nil
}
