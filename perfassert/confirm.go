// Confirming a suspicious MatchBaseline comparison with more processes of the current test.

package perfassert

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Confirming a suspicion with more processes (issue 15).
//
// A function's share moves between processes of the same code (each
// process is one draw of the machine's state: layout, caches, load), so a
// comparison of one process against a baseline of several cannot tell a
// state from a change when the change is of that size. Capturing the test
// in three processes every time would cost three times as long; capturing
// more only when the first looks suspicious costs it in about one
// unchanged test in ten (measured below) and keeps the power of three.
//
// Measured offline on five recordings of buger/jsonparser v1.1.1
// (perfassert's TestMeasureProcessBaselines, HOTBUDGET_MEASURE_SCREEN,
// 150 seeded baselines each, false-discovery rate 0.01), ObjectEach made
// 43-51% slower named alone, and unchanged comparisons that went on to the
// extra processes:
//
//	baseline      screen  named alone              confirmed unchanged
//	8 processes   none    44/71/3/43/8%            -
//	8 processes   0.25    81/100/57/100/82%        7-16%
//	16 processes  none    78/100/16/88/33%         -
//	16 processes  0.25    96/100/95/97/100%        13-26%
//	16 processes  0.1     90/100/70/97/96%         0-11%
//	16 processes  0.05    88/100/49/96/75%         0-7%
//
// Unchanged code failed 0-1.3% of comparisons in the rows that confirm
// (a sixth recording included), 0-4.7% from one process against 16.

// confirmProcesses is how many more processes capture the current test
// when the first looks suspicious.
const confirmProcesses = 2

// confirmScreen is the false-discovery rate at which the first process's
// comparison counts as suspicious: with baselines of defaultProcesses,
// 0.1 sends fewer unchanged tests to the extra processes than 0.25 did
// with 8, and catches more (see above).
const confirmScreen = 0.1

// confirmable reports whether the comparison rep of the current capture
// with a baseline of several processes (c) should be repeated with more
// processes of the current test, and says why: it failed, or a function
// of the gate is slower at confirmScreen.
func confirmable(t TestingT, c compared, current meta.Record, rep *diff.Report, opts []diff.Option) (bool, string) {
	if !c.byProcess || len(c.head) != 1 || recordOf(c.head[0]).Processes() > 1 || !testing.Testing() || recordingChild() {
		return false, ""
	}
	if current.Sampler == "" {
		return false, "" // not a capture of this process
	}
	if nm, ok := t.(namer); !ok || nm.Name() == "" {
		return false, ""
	}
	if rep.Failed() {
		return true, "it failed: " + suspects(rep)
	}
	screen := math.Max(confirmScreen, rep.Settings.Alpha)
	wide, err := checkIndexes(c.base, c.head, append(append([]diff.Option(nil), opts...), diff.WithAlpha(screen))...)
	if err != nil || !wide.Failed() {
		return false, ""
	}
	return true, fmt.Sprintf("at a false-discovery rate of %g it would fail: %s", screen, suspects(wide))
}

// suspects names the regressed functions of a report.
func suspects(rep *diff.Report) string {
	var names []string
	for _, r := range rep.Regressions() {
		names = append(names, fmt.Sprintf("%s %+.1f%% (q=%.2g)", textfmt.Name(r.Name), 100*r.Relative, r.Q))
		if len(names) == 3 {
			break
		}
	}
	if len(names) == 0 {
		return "no function named"
	}
	return strings.Join(names, ", ")
}

// confirmHead runs the current test in confirmProcesses more processes and
// returns the comparison c (the current capture's process against the
// baseline at path) with their captures as more head profiles, each one
// process, which the comparison takes process by process as the current
// one.
func confirmHead(t TestingT, path string, c compared, why string) (compared, error) {
	name := t.(namer).Name()
	ch := runChildren(t, name, confirmProcesses, fmt.Sprintf("%s compared with baseline %s: %s; running %s in %d more processes to tell a change from the state of one process",
		name, path, why, name, confirmProcesses))
	ps, failed := ch.captures(path)
	if len(failed) > 0 {
		return c, fmt.Errorf("confirming the comparison with baseline %s in more processes: %d of the %d extra runs of %s failed:\n%s",
			path, len(failed), confirmProcesses, name, textfmt.Lines(strings.Join(failed, "\n")))
	}
	head := slices.Clone(c.head)
	for i, p := range ps {
		x, err := analysis.NewIndex(p)
		if err != nil {
			return c, fmt.Errorf("confirming the comparison with baseline %s: extra process %d: %w", path, i+1, err)
		}
		head = append(head, x)
	}
	c.head = head
	c.name = fmt.Sprintf("base = %s (%d processes), head = current and %s", path, c.baseProcesses, plural(len(ps), "more process", "more processes"))
	return c, nil
}
